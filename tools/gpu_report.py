#!/usr/bin/env python3
"""Write the report of ./gradwire.sh gpu-check: one JSON file and a short markdown table beside it.

  tools/gpu_report.py --junit FILE --benches FILE --facts FILE (--out PATH | --out-dir DIR)
  tools/gpu_report.py --self-test    the verdict on made-up inputs (a test of each outcome)

Inputs, all written by gpu-check into its build tree:
  --junit    CTest's JUnit output of `ctest -L '^gpu$'` (--output-junit)
  --benches  one line per GPU benchmark run, tab-separated: name, status (passed, failed,
             not available in this build, not built), exit code, seconds, report path (or -),
             command
  --facts    a JSON object: date, commit, the GPU probe (tools/gpu_probe.py), nvidia-smi's
             answers, the toolkit, where the dependencies came from, the build tree
The report is results/gpu/<date>_<GPU name>.json (--out-dir) or --out, and the same path with .md.

Skipped is not passed (Note "Skipped is not passed", cmake/GradwireTesting.cmake): on a machine
with a GPU, a GPU test that skips, or does not run, tested nothing, so the verdict is "failed",
as it is for a failed test, a failed benchmark, or no GPU test at all. A benchmark without a
--device mode in this build is "not available in this build": reported, not a failure. Exit 0
when the verdict is "passed", 1 when not, 2 for unusable inputs. Python 3 standard library only.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

BENCH_STATUSES = ("passed", "failed", "not available in this build", "not built")
TAIL_CHARS = 800  # of a failed or skipped test's output, kept in the report


class InputError(Exception):
    pass


def read_tests(junit_path):
    """Each test case of CTest's JUnit file: name, status, seconds, and why when not passed."""
    try:
        root = ET.parse(junit_path).getroot()
    except (OSError, ET.ParseError) as e:
        raise InputError(f"cannot read CTest's JUnit output {junit_path}: {e}")
    tests = []
    for case in root.iter("testcase"):
        out = (case.findtext("system-out") or "").strip()
        failure, skipped = case.find("failure"), case.find("skipped")
        status = case.get("status", "")
        if status == "run" and failure is None:
            result = "passed"
        elif status == "fail" or failure is not None:
            result = "failed"
        elif skipped is not None and skipped.get("message", "").startswith("SKIP_"):
            result = "skipped"  # SKIP_RETURN_CODE or SKIP_REGULAR_EXPRESSION matched
        elif status == "disabled":
            result = "disabled"
        else:
            result = "not run"  # CTest could not start it (no executable, a failed fixture)
        test = {"name": case.get("name"), "result": result,
                "seconds": round(float(case.get("time") or 0), 3)}
        if result != "passed":
            why = (failure if failure is not None else skipped)
            test["message"] = why.get("message", "") if why is not None else ""
            test["output_tail"] = out[-TAIL_CHARS:]
        tests.append(test)
    return tests


def read_benches(path):
    benches = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 6 or parts[1] not in BENCH_STATUSES:
                raise InputError(f"{path}:{n}: expected 6 tab-separated fields with a status "
                                 f"among {', '.join(BENCH_STATUSES)}: {line!r}")
            name, status, rc, seconds, report, command = parts
            bench = {"name": name, "status": status, "command": command,
                     "exit_code": int(rc) if rc not in ("", "-") else None,
                     "seconds": float(seconds) if seconds not in ("", "-") else None,
                     "report": None}
            if report != "-" and os.path.exists(report):
                try:
                    with open(report) as r:
                        bench["report"] = json.load(r)
                except ValueError as e:
                    bench["status"] = "failed"
                    bench["error"] = f"its report {report} is not JSON: {e}"
            elif status == "passed":
                bench["status"] = "failed"
                bench["error"] = f"it exited 0 but wrote no report ({report})"
            benches.append(bench)
    return benches


def verdict(tests, benches):
    """(passed?, the reasons it did not pass)."""
    reasons = []
    if not tests:
        reasons.append("no test carries the label gpu in this build")
    for result in ("failed", "skipped", "not run", "disabled"):
        names = [t["name"] for t in tests if t["result"] == result]
        if names:
            reasons.append(f"GPU test(s) {result} on a machine with a GPU: {', '.join(names)}")
    failed = [b["name"] for b in benches if b["status"] == "failed"]
    if failed:
        reasons.append(f"benchmark(s) failed: {', '.join(failed)}")
    return not reasons, reasons


def slug(text):
    return re.sub(r"[^A-Za-z0-9.]+", "_", text).strip("_") or "unknown_GPU"


def gpu_name(facts):
    names = facts.get("nvidia_smi", {}).get("names") or [
        d["name"] for d in facts.get("probe", {}).get("devices", [])]
    return names[0] if names else "unknown GPU"


def headline(report):
    """A few of a benchmark report's top-level figures, for the table."""
    if not isinstance(report, dict):
        return ""
    keep = [f"{k} {v:.4g}" for k, v in report.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and re.search(r"seconds|gbps|speedup|_vs_|wrong|busbw|algbw", k)]
    return ", ".join(keep[:6])


def markdown(doc):
    def get(key):
        return doc[key] if doc[key] is not None else "unknown"
    lines = [f"# gpu-check {get('date')}: {get('gpu')}", "",
             f"Verdict: **{doc['verdict']}**. Commit {get('commit')}; driver "
             f"{get('driver_version')}, CUDA {get('cuda_driver_version')} (driver) / "
             f"{get('cuda_toolkit')} (toolkit); dependencies: {get('dependencies')}.", ""]
    for reason in doc["reasons"]:
        lines.append(f"- {reason}")
    if doc["reasons"]:
        lines.append("")
    lines += ["| GPU test (`ctest -L '^gpu$'`) | result | seconds |", "|---|---|---|"]
    for t in doc["tests"]:
        lines.append(f"| `{t['name']}` | {t['result']} | {t['seconds']} |")
    if not doc["tests"]:
        lines.append("| (none) | | |")
    lines += ["", "| benchmark | status | figures |", "|---|---|---|"]
    for b in doc["benchmarks"]:
        lines.append(f"| `{b['name']}` | {b['status']} | {headline(b['report'])} |")
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpu-report.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def build(junit, benches_path, facts_path):
    with open(facts_path) as f:
        facts = json.load(f)
    tests = read_tests(junit)
    benches = read_benches(benches_path)
    ok, reasons = verdict(tests, benches)
    smi = facts.get("nvidia_smi", {})
    probe = facts.get("probe", {})
    return {
        "kind": "gradwire gpu-check",
        "date": facts.get("date"),
        "gpu": gpu_name(facts),
        "gpus": probe.get("devices", []),
        "driver_version": smi.get("driver_version") or "unknown (no nvidia-smi)",
        "cuda_driver_version": probe.get("driver_cuda_version"),
        "cuda_toolkit": facts.get("cuda_toolkit"),
        "commit": facts.get("commit"),
        "dependencies": facts.get("dependencies"),
        "build_dir": facts.get("build_dir"),
        "host": facts.get("host"),
        "verdict": "passed" if ok else "failed",
        "reasons": reasons,
        "tests": tests,
        "tests_by_result": {r: [t["name"] for t in tests if t["result"] == r]
                            for r in ("passed", "failed", "skipped", "not run", "disabled")},
        "benchmarks": benches,
    }


def run(args):
    try:
        doc = build(args.junit, args.benches, args.facts)
    except (InputError, OSError, ValueError) as e:
        print(f"gpu_report: {e}", file=sys.stderr)
        return 2
    out = args.out or os.path.join(args.out_dir, f"{doc['date']}_{slug(doc['gpu'])}.json")
    md_path = re.sub(r"\.json$", "", out) + ".md"
    text = markdown(doc)
    write_atomically(out, json.dumps(doc, indent=2) + "\n")
    write_atomically(md_path, text)
    print(text)
    print(f"report: {out} and {md_path}")
    return 0 if doc["verdict"] == "passed" else 1


JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="{n}">{cases}</testsuite>"""
CASES = {
    "passed": '<testcase name="{name}" time="0.5" status="run"><system-out>ok</system-out>'
              '</testcase>',
    "failed": '<testcase name="{name}" time="1" status="fail"><failure message=""/>'
              '<system-out>[  FAILED  ] X.Y</system-out></testcase>',
    "skipped": '<testcase name="{name}" time="0.1" status="notrun">'
               '<skipped message="SKIP_RETURN_CODE=77"/><system-out>no CUDA device</system-out>'
               '</testcase>',
    "not run": '<testcase name="{name}" time="0" status="notrun">'
               '<skipped message="Unable to find executable"/></testcase>',
}


def self_test():
    cases = [  # (label, test results, bench statuses, expected exit)
        ("every GPU test passed, a benchmark without --device", ["passed", "passed"],
         ["passed", "not available in this build"], 0),
        ("a GPU test failed", ["passed", "failed"], ["passed"], 1),
        ("a GPU test skipped on a machine with a GPU", ["passed", "skipped"], ["passed"], 1),
        ("a GPU test could not start", ["not run"], [], 1),
        ("no GPU test at all", [], ["passed"], 1),
        ("a benchmark failed", ["passed"], ["failed"], 1),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        bench_report = os.path.join(tmp, "bench.json")
        with open(bench_report, "w") as f:
            json.dump({"encode_seconds": 0.001, "speedup_vs_nth_element": 40.0}, f)
        facts = os.path.join(tmp, "facts.json")
        with open(facts, "w") as f:
            json.dump({"date": "2026-01-01", "commit": "abc", "nvidia_smi": {
                "names": ["NVIDIA H100 80GB HBM3"], "driver_version": "580.1"},
                "probe": {"driver_cuda_version": "13.0", "devices": []}}, f)
        for n, (label, results, statuses, want) in enumerate(cases):
            junit = os.path.join(tmp, f"junit{n}.xml")
            with open(junit, "w") as f:
                f.write(JUNIT.format(n=len(results), cases="".join(
                    CASES[r].format(name=f"t{i}_{r.replace(' ', '_')}")
                    for i, r in enumerate(results))))
            benches = os.path.join(tmp, f"benches{n}.tsv")
            with open(benches, "w") as f:
                for i, s in enumerate(statuses):
                    report = bench_report if s == "passed" else "-"
                    f.write(f"bench{i}\t{s}\t0\t1.0\t{report}\tcmd --device cuda\n")
            out_dir = os.path.join(tmp, f"out{n}")
            ns = argparse.Namespace(junit=junit, benches=benches, facts=facts, out=None,
                                    out_dir=out_dir)
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null
                try:
                    got = run(ns)
                finally:
                    sys.stdout = saved
            written = os.path.join(out_dir, "2026-01-01_NVIDIA_H100_80GB_HBM3.json")
            ok = got == want and os.path.exists(written) and os.path.exists(
                written[:-5] + ".md")
            if ok:
                doc = json.load(open(written))
                ok = [t["result"] for t in doc["tests"]] == results
            print(f"self-test {'ok' if ok else 'FAIL'}: {label}: exit {got}, expected {want}")
            bad += not ok
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--junit")
    ap.add_argument("--benches")
    ap.add_argument("--facts")
    ap.add_argument("--out", help="the JSON report's path (the markdown goes beside it)")
    ap.add_argument("--out-dir", help="folder for <date>_<GPU name>.json and .md")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not (args.junit and args.benches and args.facts and (args.out or args.out_dir)):
        ap.error("--junit, --benches, --facts and one of --out, --out-dir are needed")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
