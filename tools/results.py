#!/usr/bin/env python3
"""Render docs/RESULTS.md, the generated tables of README.md and docs/STRATEGIES.md, and
results/auto_accuracy.json from the committed reports (./gradwire.sh results): the command line
of the gwresults package beside it, whose docstring says what it reads and writes."""
import sys

from gwresults.cli import main

if __name__ == "__main__":
    sys.exit(main())
