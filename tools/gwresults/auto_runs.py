"""GRADWIRE_COMPRESSOR=auto in the harness's runs: its choice and predictions at one rate, and
series of rounds of auto against one fixed strategy."""
import statistics

from .fmt import table
from .inputs import InputError, load


def render_auto(runs):
    """GRADWIRE_COMPRESSOR=auto's run at one rate against the fixed strategies beside it: its
    choice, its time to target against the best fixed one's, and the cost model's predictions
    against the steps measured."""
    a = next((x for x in runs if x.get("auto")), None)
    if a is None:
        return []
    au = a["auto"]
    fixed = [x for x in runs if x is not a and x["time_to_target_seconds"]]
    best = min(fixed, key=lambda x: x["time_to_target_seconds"]) if fixed else None
    t = a["time_to_target_seconds"]
    out = ["", f"`{a['strategy']}` chose `{au['chosen']}` ({au['how']} at step 0, in "
           f"{au['measure_seconds']:.3f} s)."]
    if best and t:
        out[-1] += (f" Time to target {t:.1f} s against the best fixed strategy's (`"
                    f"{best['strategy']}`, {best['time_to_target_seconds']:.1f} s): "
                    f"{t / best['time_to_target_seconds']:.2f}x.")
    elif best:
        out[-1] += " It never reached the target."
    if au.get("predicted_step_seconds") and au.get("mean_step_seconds"):
        out[-1] += (f" Its predicted step, from the inputs re-measured after the decision: "
                    f"{1e3 * au['predicted_step_seconds']:.1f} ms, against the run's mean "
                    f"training step {1e3 * au['mean_step_seconds']:.1f} ms "
                    f"({100 * au['prediction_error']:+.0f}%).")
        if au.get("check_error") is not None:
            out[-1] += (f" Against the median of the {1e3 * au['measured_median_step_seconds']:.1f}"
                        f" ms steps it was re-measured over: {100 * au['check_error']:+.0f}%.")
    rows = []
    timed = au.get("exchange_timed") or {}
    with_how = any(v is not None for v in timed.values())
    for name, predicted in au["candidates"].items():
        # The fixed strategy that is this candidate at its defaults: dense is none, local SGD at
        # period K local_sgd_kK.
        fixed_name = "dense" if name == "none" else \
            f"local_sgd_k{au.get('local_sgd_period')}" if name == "local_sgd" else name
        measured = next((x for x in runs if x["strategy"] == fixed_name), None)
        step = measured["train_seconds"] / measured["steps"] if measured and \
            measured["steps"] else None
        row = [name, f"{1e3 * predicted:.1f}"]
        if with_how:
            row.append("timed" if timed.get(name) else "modelled")
        rows.append(row + [f"`{measured['strategy']}`: {1e3 * step:.1f}" if step else "-",
                           f"{100 * (predicted / step - 1):+.0f}%" if step else "-"])
    out += ["", "Its predictions at step 0 (step 0's compute) against the fixed runs' mean "
            "training steps" + ("; exchange: run and timed at the decision, or modelled from its "
                                "bytes (Note [The auto cost model])" if with_how else "") + ":", ""]
    out += table(["candidate", "predicted ms/step"] + (["exchange"] if with_how else []) +
                 ["fixed run: measured ms/step", "error"], rows)
    return out


def render_series(rel, rounds, ext):
    """auto against the fixed strategy beside it, round by round, per rate: how much of auto's
    time against it is the run-to-run spread of the shared machine."""
    reports = [load(r) for r in rounds]
    rates = sorted({run["rate_mbit"] for r in reports for run in r["runs"]})
    st = reports[0]["settings"]
    out = ["", f"### {ext['title']}", "",
           f"{len(reports)} rounds of `gradwire_lowband.py` ({st['hosts']} hosts, model "
           f"{st['model']}, {st['epochs']} epoch(s), target accuracy {st['target_accuracy']:g}), "
           "each with `auto` and one fixed strategy only, the order alternating; every round "
           "shapes its links afresh. Per rate: each round's times to target, their ratio, auto's "
           "measuring time, what is left of auto's extra time beyond it, its check's prediction "
           "against its run's mean training step, and both runs' samples/s.", ""]
    for rate in rates:
        rows, ratios, fixed_name = [], [], None
        for i, r in enumerate(reports):
            runs = [x for x in r["runs"] if x["rate_mbit"] == rate]
            a = next((x for x in runs if x.get("auto")), None)
            f = next((x for x in runs if not x.get("auto")), None)
            if a is None or f is None:
                raise InputError(f"{rounds[i]}: no auto run and fixed run at {rate} Mbit/s")
            if fixed_name not in (None, f["strategy"]):
                raise InputError(f"{rel}: the rounds compare auto with different strategies")
            fixed_name = f["strategy"]
            ta, tf = a["time_to_target_seconds"], f["time_to_target_seconds"]
            ratio_ = ta / tf if ta and tf else None
            if ratio_:
                ratios.append(ratio_)
            first = runs[0]["strategy"]
            rows.append([str(i + 1), f"`{first}`", f"`{a['auto']['chosen']}`",
                         f"{tf:.2f}" if tf else "never", f"{ta:.2f}" if ta else "never",
                         f"{ratio_:.3f}x" if ratio_ else "-",
                         f"{a['auto']['measure_seconds']:.3f}",
                         f"{ta - tf - a['auto']['measure_seconds']:+.2f}" if ta and tf else "-",
                         f"{100 * a['auto']['prediction_error']:+.0f}%"
                         if a["auto"].get("prediction_error") is not None else "-",
                         f"{f['samples_per_second']:,.0f}", f"{a['samples_per_second']:,.0f}"])
        out += [f"#### {rate:g} Mbit/s", ""]
        out += table(["round", "ran first", "auto chose", f"`{fixed_name}` time to target (s)",
                      "`auto` time to target (s)", "auto / fixed", "auto measuring (s)",
                      "auto's time beyond the fixed one's and its measuring (s)",
                      "auto's prediction vs its mean step",
                      f"`{fixed_name}` samples/s", "`auto` samples/s"], rows)
        if ratios:
            out += ["", f"auto / `{fixed_name}` over {len(ratios)} rounds: median "
                    f"{statistics.median(ratios):.3f}x, from {min(ratios):.3f}x to "
                    f"{max(ratios):.3f}x."]
        out.append("")
    out += [f"Reports: `{rel}/round<N>/report.json` (with their `report.md`), binaries built from "
            f"{ext['built_from']}, on {ext['date']}; {ext['provenance']}. Command: "
            f"`{ext['command']}`."]
    return out
