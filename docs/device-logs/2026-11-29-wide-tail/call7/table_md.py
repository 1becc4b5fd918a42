#!/usr/bin/env python3
"""Call 7's table (e527833) as docs/benchmarks.md prints it: this run, its --deterministic twin, the
best peer (../shared/PERFORMANCE.md) and 79fc928's table (2026-11-29-beside/call3).
scripts/table-md.py does the work."""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
script = here.parents[3] / "scripts/table-md.py"
sys.exit(subprocess.call([sys.executable, str(script), str(here / "r"), str(here / "../../2026-11-29-beside/call3/r/table.csv"), "79fc928", "--peers"]))
