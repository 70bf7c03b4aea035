#!/usr/bin/env python3
"""tools/phase_times.py and the timing tables (tools/gwresults/timings.py): a phase file becomes
a report, a malformed line is refused with its place, and the tables say which run was stopped
or failed and which figure the README quotes."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools")
sys.path.insert(0, TOOLS)
from gwresults import timings  # noqa: E402


def report(kind, date, phases, **extra):
    r = {"kind": kind, "commit": "abcdef0123", "date": date, "cores": 2, "command": "c",
         "note": "", "packages_installed_before": True,
         "phases": [dict(name=n, seconds=s, exit=e, **x) for n, s, e, x in phases],
         "total_seconds": sum(s for _, s, _, _ in phases)}
    r.update(extra)
    return r


class PhaseTimes(unittest.TestCase):
    def run_tool(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            tsv, out = os.path.join(tmp, "p.tsv"), os.path.join(tmp, "r.json")
            with open(tsv, "w") as f:
                f.write(text)
            proc = subprocess.run([sys.executable, os.path.join(TOOLS, "phase_times.py"), "ci",
                                   tsv, out, "--command", "bash .ci/run"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                return proc, None
            with open(out) as f:
                return proc, json.load(f)

    def test_a_phase_file_becomes_a_report(self):
        proc, got = self.run_tool("install\t3\t0\nbuild openmpi\t400\t0\ntest openmpi\t600\t8\n")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([p["name"] for p in got["phases"]],
                         ["install", "build openmpi", "test openmpi"])
        self.assertEqual(got["total_seconds"], 1003)
        self.assertEqual(got["phases"][2]["exit"], 8)
        self.assertTrue(got["packages_installed_before"])  # an install of under 5 s
        self.assertEqual(got["command"], "bash .ci/run")
        # The table the commands print: each phase, a failed one's status, the total.
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[3].split(), ["test", "openmpi", "600", "(exit", "8)"])
        self.assertEqual(lines[-1].split(), ["total", "1003"])

    def test_a_phase_beside_the_others_is_named_so_and_left_out_of_the_total(self):
        proc, got = self.run_tool("build tsan\t300\t0\tbeside\nbuild openmpi\t400\t0\n"
                                  "wait for the builds beside\t20\t0\n")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(got["phases"][0], {"name": "build tsan (beside)", "seconds": 300,
                                            "exit": 0, "beside": True})
        self.assertEqual(got["total_seconds"], 420)
        self.assertEqual(proc.stdout.splitlines()[-1].split()[-1], "420")
        proc, _ = self.run_tool("build tsan\t300\t0\tbehind\n")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("then optionally <tab>beside", proc.stderr)

    def test_a_long_install_means_the_packages_were_installed(self):
        _, got = self.run_tool("install\t90\t0\n")
        self.assertFalse(got["packages_installed_before"])

    def test_a_malformed_line_is_refused_with_its_place(self):
        proc, _ = self.run_tool("install\t3\t0\nbuild\tlong\t0\n")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("p.tsv:2: expected NAME<tab>SECONDS<tab>STATUS", proc.stderr)
        self.assertIn("'build\\tlong\\t0'", proc.stderr)


class Tables(unittest.TestCase):
    RUNS = [("a.json", report("ci", "2026-01-01", [("build", 10, 0, {}),
                                                   ("test", 5, 0, {"stopped": True})])),
            ("b.json", report("ci", "2026-01-02", [("build", 7, 0, {}), ("test", 4, 1, {})])),
            ("c.json", report("demo", "2026-01-02", [("install", 0, 0, {}), ("train", 30, 0, {})]))]

    def test_each_run_a_column_stopped_and_failed_phases_marked(self):
        rows = timings.render_kind("ci", self.RUNS)
        text = "\n".join(rows)
        self.assertIn("| `test` | 5 s (stopped) | 4 s (failed) |", text)
        self.assertIn("| total | at least 15 s | 11 s |", text)
        self.assertEqual(timings.render_kind("gpu", self.RUNS), ["No gpu timing yet."])

    def test_a_phase_run_twice_has_a_row_each_time(self):
        runs = [("a.json", report("ci", "2026-01-03", [("install torch", 36, 0, {}),
                                                     ("build", 9, 0, {}),
                                                     ("install torch", 3, 0, {})]))]
        text = "\n".join(timings.render_kind("ci", runs))
        self.assertIn("| `install torch` | 36 s |", text)
        self.assertIn("| `install torch` (2.) | 3 s |", text)

    def test_the_readme_quotes_the_newest_runs(self):
        saved = timings.timing_reports
        timings.timing_reports = lambda: self.RUNS
        try:
            line = timings.readme_lines()[0]
        finally:
            timings.timing_reports = saved
        self.assertIn("`demo` took 0.5 min", line)
        self.assertIn("CI (`.ci/run`: `test`, then MPICH and the sanitizers) 0.2 min", line)


if __name__ == "__main__":
    unittest.main()
