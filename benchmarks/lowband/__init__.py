"""gradwire lowband: the reference trainer on a virtual cluster of shaped links.

The modules, lowest first: common (errors, logging, running a command), strategies (reads
benchmarks/strategies.json), cluster (network namespaces, the bridge, tbf shaping, cleanup),
launch (the build's MPI launcher and its command lines), report (run summaries, comparisons, the
JSON report's schema, Markdown, the plot). gradwire_lowband.py is the command line over them;
docs/LOWBAND.md describes the whole.
"""
