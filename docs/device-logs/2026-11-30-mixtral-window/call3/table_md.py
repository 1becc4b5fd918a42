#!/usr/bin/env python3
"""Call 3's table (b7a1afa) as docs/benchmarks.md prints it: this run, its --deterministic twin, the
best peer (../shared/PERFORMANCE.md) and e527833's table (2026-11-29-wide-tail/call7).
scripts/table-md.py does the work."""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
script = here.parents[3] / "scripts/table-md.py"
sys.exit(subprocess.call([sys.executable, str(script), str(here / "r"), str(here / "../../2026-11-29-wide-tail/call7/r/table.csv"), "e527833", "--peers"]))
