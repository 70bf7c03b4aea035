"""Render docs/RESULTS.md, the generated tables of README.md and docs/STRATEGIES.md, and
results/auto_accuracy.json (GRADWIRE_COMPRESSOR=auto's accuracy costs, as data: nothing rendered
here is written into a library folder).

  tools/results.py           write them (./gradwire.sh results)
  tools/results.py --check   exit 1, with a diff, if any of them differs from what the committed
                             inputs give (the results_current test)
  tools/results.py --self-test  in a scratch copy of the inputs and outputs: --check passes, and
                             fails after a figure in a report, RESULTS.md or auto_accuracy.json
                             is changed, or with a link to a section RESULTS.md does not have
Every run also checks that each RESULTS.md#section link in README.md and docs/ names a heading.

Inputs, all committed: benchmarks/strategies.json (read by tools/strategies_file.py),
results/reports/ (the trainer's and the benchmarks' JSON reports, and manifest.json, made by
tools/run_reports.py), results/lowband/report.json and results/lowband/runs/*/report.json (the
low-bandwidth harness's) and results/gpu/*.json (./gradwire.sh gpu-check's reports). Every figure in
the output is read or computed from them; nothing here is a measurement. Python 3 standard
library only.

The modules, lowest first: inputs (where the inputs are, reading them, provenance), fmt (how
figures are written), then a module per part of RESULTS.md (accuracy, benches, auto_runs,
lowband, gpu), documents (the generated files) and cli (write, --check, --self-test).
"""
