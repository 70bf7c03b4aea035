#!/usr/bin/env python3
"""tools/strategies_file.py, the one reader of benchmarks/strategies.json (strategies_file_test).

  strategies_file_test.py [--cmake CMAKE]

- the committed file reads, and gives the accuracy tests' variables as CMake read them before
  the reader was Python (members in key order, numbers as their shortest decimals);
- each mistake the reader refuses stops it with a message naming the entry and the field;
- through CMake (a configure of tests/docs/strategies_project, as the accuracy tests' configure
  reads the file): the committed file's variables arrive as the reader made them, and a mistake
  stops the configure with the reader's message.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import strategies_file  # noqa: E402

CMAKE = "cmake"
COMMITTED = strategies_file.load()


def entry(spec, name):
    return next(s for s in spec["strategies"] if s["name"] == name)


# (what is changed, the change, the end of the message that must stop the reader)
MISTAKES = [
    ("an unknown top-level key", lambda d: d.update(extra=1),
     "top level: unknown key 'extra' (known: schema, baseline, accuracy_run, ci_accuracy_run, "
     "strategies, placeholders)"),
    ("no schema", lambda d: d.pop("schema"), "top level: missing field 'schema'"),
    ("another schema", lambda d: d.update(schema="gradwire-strategies/1"),
     "schema: 'gradwire-strategies/1' (this build reads gradwire-strategies/2)"),
    ("a baseline not in the file", lambda d: d.update(baseline="nope"),
     "baseline: 'nope' is not a strategy in the file"),
    ("ranks as a string", lambda d: d["accuracy_run"].update(ranks="4"),
     "accuracy_run.ranks: expected a number, found STRING"),
    ("ranks not whole", lambda d: d["accuracy_run"].update(ranks=2.5),
     "accuracy_run.ranks: 2.5 is not a whole number of at least 1"),
    ("an argument not a string", lambda d: d["accuracy_run"]["args"].append(3),
     "accuracy_run.args[11]: expected a string, found NUMBER"),
    ("no strategies", lambda d: d.update(strategies=[]), "strategies: empty"),
    ("a name with capitals", lambda d: d["strategies"][1].update(name="Dense"),
     "strategy 'Dense' (strategies[1]): name: only a-z, 0-9, _ and +"),
    ("a name twice", lambda d: d["strategies"][1].update(name="dense"),
     "strategy 'dense' (strategies[1]): name: a second strategy of that name"),
    ("a misspelt field", lambda d: entry(d, "fp16").update(sumary="x"),
     "strategy 'fp16' (strategies[2]): unknown key 'sumary' (known: name, summary, env, "
     "accuracy)"),
    ("no env", lambda d: entry(d, "fp16").pop("env"),
     "strategy 'fp16' (strategies[2]): missing field 'env'"),
    ("a summary not a string", lambda d: entry(d, "fp16").update(summary=True),
     "strategy 'fp16' (strategies[2]): summary: expected a string, found BOOLEAN"),
    ("a variable not GRADWIRE_*", lambda d: entry(d, "fp16")["env"].update(OMP_THREADS="1"),
     "strategy 'fp16' (strategies[2]): env: 'OMP_THREADS' is not a GRADWIRE_* variable"),
    ("a setting not a string", lambda d: entry(d, "fp16")["env"].update(GRADWIRE_X=1),
     "strategy 'fp16' (strategies[2]): env.GRADWIRE_X: expected a string, found NUMBER"),
    ("an unknown placeholder", lambda d: entry(d, "fp16")["env"].update(GRADWIRE_X="{steps}"),
     "strategy 'fp16' (strategies[2]): env.GRADWIRE_X: unknown placeholder in '{steps}'"),
    ("a ';' in a setting", lambda d: entry(d, "fp16")["env"].update(GRADWIRE_X="a;b"),
     "strategy 'fp16' (strategies[2]): env.GRADWIRE_X: 'a;b': a ';' would split it in two in "
     "CMake's lists"),
    ("a misspelt accuracy field", lambda d: entry(d, "fp16")["accuracy"].update(seed=[1]),
     "strategy 'fp16' (strategies[2]): accuracy: unknown key 'seed' (known: seeds, ci, why, "
     "baseline, vs_baseline, check, labels)"),
    ("no seeds", lambda d: entry(d, "fp16")["accuracy"].update(seeds=[]),
     "strategy 'fp16' (strategies[2]): accuracy: seeds: empty"),
    ("a seed as a string", lambda d: entry(d, "fp16")["accuracy"].update(seeds=[42, "1"]),
     "strategy 'fp16' (strategies[2]): accuracy.seeds[1]: expected a number, found STRING"),
    ("labels as a string", lambda d: entry(d, "fp16")["accuracy"].update(labels="amp"),
     "strategy 'fp16' (strategies[2]): accuracy.labels: expected an array, found STRING"),
    ("a baseline of its own", lambda d: entry(d, "fp16")["accuracy"].update(baseline="fp16"),
     "strategy 'fp16': accuracy.baseline: 'fp16' is not another strategy in the file"),
    ("a misspelt expectation",
     lambda d: entry(d, "fp16")["accuracy"]["vs_baseline"].update(max_ratioo={}),
     "strategy 'fp16' (strategies[2]): accuracy.vs_baseline: unknown key 'max_ratioo' (known: "
     "max_drop, min_ratio, max_ratio)"),
    ("an expectation not a pointer",
     lambda d: entry(d, "fp16")["accuracy"]["vs_baseline"]["max_drop"].update(final=0.1),
     "strategy 'fp16' (strategies[2]): accuracy.vs_baseline.max_drop: 'final' is not a JSON "
     "pointer (/a/b, or /a:/b for a ratio)"),
    ("a bound as a string",
     lambda d: entry(d, "fp16")["accuracy"]["vs_baseline"]["max_drop"].update(
         {"/final_test_accuracy": "0.003"}),
     "strategy 'fp16' (strategies[2]): accuracy.vs_baseline.max_drop./final_test_accuracy: "
     "expected a number, found STRING"),
    ("nothing asserted", lambda d: entry(d, "fp16")["accuracy"].pop("vs_baseline"),
     "strategy 'fp16' (strategies[2]): accuracy: neither vs_baseline nor check: nothing to "
     "assert"),
    ("a misspelt check", lambda d: entry(d, "dense")["accuracy"]["check"].update(mid={}),
     "strategy 'dense' (strategies[0]): accuracy.check: unknown key 'mid' (known: min, max)"),
    ("no CI run", lambda d: d.pop("ci_accuracy_run"),
     "top level: missing field 'ci_accuracy_run'"),
    ("no CI epochs", lambda d: d["ci_accuracy_run"].update(epochs=0),
     "ci_accuracy_run.epochs: 0 is not a whole number of at least 1"),
    ("no CI train subset", lambda d: d["ci_accuracy_run"].pop("train_subset"),
     "ci_accuracy_run: missing field 'train_subset'"),
    ("CI steps that the subset does not make",
     lambda d: d["ci_accuracy_run"].update(steps_per_epoch=468),
     "ci_accuracy_run.steps_per_epoch: 468, but 29952 samples make 234 steps of 4 x 32"),
    ("a train subset in the full run",
     lambda d: d["accuracy_run"]["args"].extend(["--train-subset", "100"]),
     "accuracy_run.args: --train-subset (ci_accuracy_run.train_subset adds it)"),
    ("the full run without --epochs",
     lambda d: d["accuracy_run"].update(args=["--model", "mlp"]),
     "accuracy_run.args: no --epochs N (ci_accuracy_run.epochs replaces it)"),
    ("no ci block", lambda d: entry(d, "fp16")["accuracy"].pop("ci"),
     "strategy 'fp16' (strategies[2]): accuracy: missing field 'ci'"),
    ("a ci block without its reason", lambda d: entry(d, "fp16")["accuracy"]["ci"].pop("why"),
     "strategy 'fp16' (strategies[2]): accuracy.ci: missing field 'why'"),
    ("a ci block asserting nothing",
     lambda d: entry(d, "fp16")["accuracy"]["ci"].pop("vs_baseline"),
     "strategy 'fp16' (strategies[2]): accuracy.ci: neither vs_baseline nor check: nothing to "
     "assert"),
    ("a ci setting not GRADWIRE_*",
     lambda d: entry(d, "fp16")["accuracy"]["ci"].update(env={"OMP_THREADS": "1"}),
     "strategy 'fp16' (strategies[2]): accuracy.ci: env: 'OMP_THREADS' is not a GRADWIRE_* "
     "variable"),
    ("a seed the baseline has no run of",
     lambda d: entry(d, "fp16")["accuracy"].update(seeds=[42, 7]),
     "strategy 'fp16': accuracy.seeds: seed 7 has no 'dense' run to compare with (its "
     "accuracy.seeds)"),
]


def mistaken(change):
    spec = copy.deepcopy(COMMITTED)
    change(spec)
    return json.dumps(spec, indent=1)


class Reader(unittest.TestCase):
    def test_the_committed_file_gives_the_accuracy_tests_variables(self):
        got = dict(strategies_file.cmake_variables(COMMITTED, "f.json"))
        self.assertEqual(got["GW_STRATEGIES"][:3], ["dense", "dense_hier", "fp16"])
        self.assertEqual(got["GW_ACCURACY_RANKS"], ["4"])
        self.assertEqual(got["GW_STRATEGY_dgc+amp_ID"], ["dgc_plus_amp"])
        self.assertEqual(got["GW_STRATEGY_dgc_hier_BASE"], ["dgc"])
        self.assertEqual(got["GW_STRATEGY_auto_SEEDS"], [])
        # Key order, the placeholder filled in, numbers as their shortest decimals.
        self.assertEqual(got["GW_STRATEGY_post_local_sgd_ENV"], [
            "GRADWIRE_LOCAL_SGD_BEGIN_STEP=468", "GRADWIRE_LOCAL_SGD_K=8",
            "GRADWIRE_SYNC=post_local_sgd"])
        self.assertEqual(got["GW_STRATEGY_fp16_VS_BASELINE"], [
            "--max-drop", "/final_test_accuracy=0.003",
            "--min-ratio", "/gradient_bytes_per_step:/gradient_bytes_per_step=1.98",
            "--max-ratio", "/gradient_bytes_per_step:/gradient_bytes_per_step=2.02"])
        # The CI runs: one epoch of half the set, one seed, the ci block's settings over the
        # strategy's.
        self.assertEqual(got["GW_CI_ACCURACY_ARGS"][:4], ["--model", "mlp", "--epochs", "1"])
        self.assertEqual(got["GW_CI_ACCURACY_ARGS"][4:-2], got["GW_ACCURACY_ARGS"][4:])
        self.assertEqual(got["GW_CI_ACCURACY_ARGS"][-2:], ["--train-subset", "29952"])
        self.assertEqual(got["GW_CI_ACCURACY_SEED"], ["42"])
        self.assertEqual(got["GW_STRATEGY_post_local_sgd_CI_ENV"], [
            "GRADWIRE_LOCAL_SGD_BEGIN_STEP=117", "GRADWIRE_LOCAL_SGD_K=8",
            "GRADWIRE_SYNC=post_local_sgd"])
        self.assertEqual(got["GW_STRATEGY_dgc_CI_VS_BASELINE"][:2],
                         ["--max-drop", "/final_test_accuracy=0.01"])
        self.assertEqual(got["GW_STRATEGY_dgc_CI_CHECK"][-2:],
                         ["--max", "/compression/warmup_end_step=0"])
        self.assertEqual(got["GW_STRATEGY_topk_CI_ENV"], [])
        self.assertEqual(got["GW_STRATEGY_dense_CHECK"], [
            "--min", "/final_test_accuracy=0.84",
            "--min", "/traffic/gradient/sent_bytes_per_step_max_rank=8002624",
            "--min", "/world_size=4",
            "--max", "/traffic/gradient/sent_bytes_per_step_max_rank=8002624"])

    def test_each_mistake_names_the_entry_and_the_field(self):
        for what, change, message in MISTAKES:
            with self.subTest(what):
                with self.assertRaises(strategies_file.StrategiesError) as caught:
                    strategies_file.parse(mistaken(change), "f.json")
                self.assertEqual(str(caught.exception), "f.json: " + message)

    def test_not_json(self):
        with self.assertRaisesRegex(strategies_file.StrategiesError, r"^f\.json: file: not valid "
                                    r"JSON: "):
            strategies_file.parse("{", "f.json")


class Configure(unittest.TestCase):
    """The reader as CMake runs it, in a scratch build tree."""

    def configure(self, text):
        tmp = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        path = os.path.join(tmp, "strategies.json")
        with open(path, "w") as f:
            f.write(text)
        proc = subprocess.run([CMAKE, "-S", os.path.join(HERE, "strategies_project"), "-B",
                               os.path.join(tmp, "build"), f"-DSTRATEGIES_FILE_UNDER_TEST={path}",
                               f"-DPython3_EXECUTABLE={sys.executable}"],
                              capture_output=True, text=True)
        return proc, path, os.path.join(tmp, "build", "strategies_variables.txt")

    def test_the_variables_arrive_as_the_reader_made_them(self):
        with open(strategies_file.PATH) as f:
            proc, path, variables = self.configure(f.read())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        want = sorted(f"{name}=[{';'.join(values)}]"
                      for name, values in strategies_file.cmake_variables(COMMITTED, path))
        with open(variables) as f:
            self.assertEqual(f.read().splitlines(), want)

    def test_a_mistake_stops_the_configure_with_its_message(self):
        for what, change, message in (MISTAKES[0], MISTAKES[10], MISTAKES[-1]):
            with self.subTest(what):
                proc, path, variables = self.configure(mistaken(change))
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn(f"{path}: {message}", " ".join(proc.stderr.split()))
                self.assertFalse(os.path.exists(variables))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cmake", default="cmake", help="the cmake to configure with")
    args, rest = ap.parse_known_args()
    CMAKE = args.cmake
    unittest.main(argv=[sys.argv[0]] + rest)
