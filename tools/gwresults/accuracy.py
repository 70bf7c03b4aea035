"""Accuracy against traffic: each strategy's accuracy reports against dense's, its expectations
in strategies.json, and the tables of RESULTS.md, README.md and docs/STRATEGIES.md."""
import os

from . import inputs
from .fmt import acc, env_text, nbytes, points, ratio, table
from .inputs import REPORTS, STRATEGIES, InputError, load, mean, pointer, provenance


class Strategy:
    """One strategy of strategies.json with its reports (one per seed)."""

    def __init__(self, spec, s):
        self.name = s["name"]
        self.summary = s["summary"]
        self.env = s["env"]
        self.accuracy = s.get("accuracy")
        # What the accuracy expectations compare with: accuracy.baseline, else the file's.
        self.base_name = (self.accuracy or {}).get("baseline", spec["baseline"])
        baseline = next(b for b in spec["strategies"] if b["name"] == spec["baseline"])
        self.seeds = (self.accuracy or baseline["accuracy"])["seeds"]
        if not self.accuracy:
            self.seeds = self.seeds[:1]
        self.files = [f"accuracy_mlp_{self.name}_seed{seed}.json" for seed in self.seeds]
        # A strategy with accuracy expectations must have its reports; one without is shown as
        # not measured until it has them.
        if not self.accuracy and not all(os.path.exists(os.path.join(inputs.ROOT, REPORTS, f))
                                         for f in self.files):
            self.files, self.reports = [], None
            return
        self.reports = [load(f"{REPORTS}/{f}") for f in self.files]
        for f, r in zip(self.files, self.reports):
            if r.get("program") != "gradwire_train" or r.get("stopped_by_time_budget") or \
                    r.get("diverged") is not None:
                raise InputError(f"{REPORTS}/{f} is not a complete gradwire_train run")

    def figure(self, ptr):
        return mean(pointer(r, ptr) for r in self.reports)

    def after_warmup(self):
        """Mean gradient bytes per step after a compressor's warm-up (topk, dgc, powersgd), or
        None."""
        c = [r["compression"] for r in self.reports]
        if all(x.get("compressor") in ("topk", "dgc", "powersgd") and
               x.get("steps_after_warmup", 0) > 0
               for x in c):
            return mean(x["gradient_bytes_per_step_after_warmup"] for x in c)
        return None


class Accuracy:
    def __init__(self, spec):
        self.spec = spec
        self.strategies = [Strategy(spec, s) for s in spec["strategies"]]
        self.base = next(s for s in self.strategies if s.name == spec["baseline"])

    def base_reports(self, seeds, base=None):
        base = base or self.base
        if base.reports is None:
            raise InputError(f"no {base.name} reports to compare with")
        by_seed = dict(zip(base.seeds, base.reports))
        missing = [s for s in seeds if s not in by_seed]
        if missing:
            raise InputError(f"no {base.name} report for seed(s) {missing}")
        return [by_seed[s] for s in seeds]

    def vs_base(self, s, base_ptr, run_ptr=None, base=None):
        b = mean(pointer(r, base_ptr) for r in self.base_reports(s.seeds, base))
        r = s.figure(run_ptr or base_ptr)
        return b, r

    def drop(self, s):
        b, r = self.vs_base(s, "/final_test_accuracy")
        return b - r

    def exchange_ratio(self, s):
        b, r = self.vs_base(s, "/exchange_bytes_per_step")
        return b / r if r else None

    def warmup_ratio(self, s):
        aw = s.after_warmup()
        if aw is None:
            return None
        b = mean(pointer(r, "/gradient_bytes_per_step") for r in self.base_reports(s.seeds))
        return b / aw

    def expectations(self, s):
        """strategies.json's accuracy expectations against the reports: (met, text) or None."""
        if not s.accuracy:
            return None
        results = []
        vs = s.accuracy.get("vs_baseline", {})
        base = next(x for x in self.strategies if x.name == s.base_name)
        against = "" if base is self.base else f" vs {base.name}"
        for ptr, limit in vs.get("max_drop", {}).items():
            b, r = self.vs_base(s, ptr, base=base)
            results.append((b - r <= limit,
                            f"drop{against} {points(b - r)} <= {100 * limit:g} pts"))
        pairs = list(dict.fromkeys(list(vs.get("min_ratio", {})) + list(vs.get("max_ratio", {}))))
        for pair in pairs:
            lo, hi = vs.get("min_ratio", {}).get(pair), vs.get("max_ratio", {}).get(pair)
            bp, rp = pair.split(":")
            b, r = self.vs_base(s, bp, rp, base=base)
            x = b / r if r else 0.0
            ok = r != 0 and (lo is None or x >= lo) and (hi is None or x <= hi)
            bound = (f"in [{lo:g}, {hi:g}]" if lo is not None and hi is not None
                     else f">= {lo:g}" if lo is not None else f"<= {hi:g}")
            results.append((ok, f"{rp.rsplit('/', 1)[-1]} ratio{against} {ratio(x)} {bound}"))
        for kind, ok_fn, sign in (("min", lambda x, l: x >= l, ">="),
                                  ("max", lambda x, l: x <= l, "<=")):
            for ptr, limit in s.accuracy.get("check", {}).get(kind, {}).items():
                values = [pointer(r, ptr) for r in s.reports]
                ok = all(ok_fn(v, limit) for v in values)
                if not ok:
                    results.append((False, f"{ptr} = {values} not {sign} {limit:g}"))
                else:
                    results.append((True, None))
        met = all(ok for ok, _ in results)
        shown = [t for _, t in results if t]
        return met, shown

    def render(self, manifest):
        run = self.spec["accuracy_run"]
        out = ["## Accuracy against traffic", ""]
        out.append(
            f"The reference MLP on Fashion-MNIST, {run['ranks']} ranks, `gradwire_train "
            f"{' '.join(run['args'])} --seed S`, with each strategy's settings from "
            f"`{STRATEGIES}`, run as the accuracy tests run it. Accuracy is the final test "
            "accuracy, the mean over the seeds listed; the drop is dense's mean over the same "
            "seeds minus this one, in percentage points (positive: below dense). Bytes are the "
            "busiest rank's sent bytes per step from gradwire's counters: exchange = gradient + "
            "parameter bytes over the whole run; after warm-up = gradient bytes once a "
            "compressor's warm-up (topk's, dgc's, powersgd's whole steps) is over. Ratios are dense's bytes / this strategy's. The last "
            "column checks the strategy's accuracy expectations in strategies.json; a strategy "
            "without expectations is run with the first seed only, to measure it.")
        out.append("")
        rows = []
        for s in self.strategies:
            if s.reports is None:
                rows.append([f"`{s.name}`", "-", "not measured: no report"] + ["-"] * 7)
                continue
            exp = self.expectations(s)
            if exp is None:
                verdict = "-"
            else:
                met, shown = exp
                verdict = ("met" if met else "**NOT met**") + (
                    ": " + "; ".join(shown) if shown else "")
            aw = s.after_warmup()
            rows.append([
                f"`{s.name}`", ", ".join(str(x) for x in s.seeds),
                acc(s.figure("/final_test_accuracy")),
                "-" if s is self.base else points(self.drop(s)),
                nbytes(s.figure("/exchange_bytes_per_step")),
                ratio(self.exchange_ratio(s)),
                "-" if aw is None else nbytes(aw),
                ratio(self.warmup_ratio(s)),
                f"{s.figure('/samples_per_second'):,.0f}",
                verdict,
            ])
        out += table(["strategy", "seeds", "test accuracy", "drop vs dense (pts)",
                      "exchange B/step", "ratio vs dense", "grad B/step after warm-up",
                      "ratio after warm-up", "samples/s", "expectations (strategies.json)"], rows)
        out.append("")
        per_seed = [s for s in self.strategies if len(s.seeds) > 1]
        if per_seed:
            out.append("Per seed: " + "; ".join(
                f"`{s.name}` " + ", ".join(f"{acc(r['final_test_accuracy'])} (seed {seed})"
                                           for seed, r in zip(s.seeds, s.reports))
                for s in per_seed) + ".")
            out.append("")
        out.append("Samples/s is training throughput with 4 ranks on the machine below, which "
                   "other jobs shared; it is the noisiest column.")
        out.append("")
        out += provenance(manifest, [f for s in self.strategies for f in s.files])
        return out

    def headline(self, s):
        a = s.figure("/final_test_accuracy")
        if s is self.base:
            acc_text = f"{acc(a)}"
        else:
            # The drop, with RESULTS.md's sign: dense's accuracy minus this one's.
            acc_text = f"{acc(a)} (drop {points(self.drop(s))})"
        ex = self.exchange_ratio(s)
        aw = self.warmup_ratio(s)
        if s is self.base:
            bytes_text = f"{nbytes(s.figure('/exchange_bytes_per_step'))} B/step"
        elif aw is not None:
            bytes_text = f"{ratio(aw)} fewer gradient bytes after warm-up ({ratio(ex)} overall)"
        elif ex is not None and ex < 1:
            bytes_text = f"{ratio(1 / ex)} more bytes"
        else:
            bytes_text = f"{ratio(ex)} fewer bytes"
        if all((r.get("topology") or {}).get("hierarchical") for r in s.reports):
            # Two levels: what matters is what leaves a node, not the bytes inside it.
            inter = s.figure("/traffic/gradient/inter_node_sent_bytes_per_step_max_node")
            bytes_text += (f"; {nbytes(inter)} gradient B/step leave each node (two levels, "
                           "docs/TOPOLOGY.md)")
        return acc_text, bytes_text

    def readme_table(self):
        rows = []
        for s in self.strategies:
            if s.reports is None:
                rows.append([f"`{s.name}`", s.summary, "not measured", "-"])
                continue
            a, b = self.headline(s)
            rows.append([f"`{s.name}`", s.summary, a, b])
        return table(["strategy", "what it does", "test accuracy (drop vs dense, pts)",
                      "bytes per step vs dense"], rows)

    def settings_block(self):
        run = self.spec["accuracy_run"]
        fill = {"{steps_per_epoch}": str(run["steps_per_epoch"])}
        rows = []
        for s in self.strategies:
            env = {}
            for k, v in s.env.items():
                for p, value in fill.items():
                    v = v.replace(p, value)
                env[k] = v
            rows.append([f"`{s.name}`", s.summary, f"`{env_text(env)}`" if env else
                         "none (the defaults)"])
        out = table(["strategy", "what it does", "settings"], rows)
        out += ["", f"Settings as for the accuracy runs (`{{steps_per_epoch}}` = "
                f"{run['steps_per_epoch']}, the MLP's steps per epoch at {run['ranks']} x 32). "
                "For example:", "", "```sh"]
        for s in self.strategies:
            if s.name in ("dgc", "post_local_sgd"):
                env = {k: v.replace("{steps_per_epoch}", str(run["steps_per_epoch"]))
                       for k, v in s.env.items()}
                # Wrapped between words, an option kept with its value.
                args = run["args"] + ["--report", f"{s.name}.json"]
                words = env_text(env).split() + [
                    f"mpirun -np {run['ranks']} build/bin/gradwire_train"]
                for i, a in enumerate(args):
                    if a.startswith("--") or i == 0:
                        words.append(a)
                    else:
                        words[-1] += " " + a
                line = ""
                for w in words:
                    if line and len(line) + len(w) + 1 > 92:
                        out.append(line + " \\")
                        line = "  " + w
                    else:
                        line = f"{line} {w}" if line else w
                out.append(line)
        out.append("```")
        return out
