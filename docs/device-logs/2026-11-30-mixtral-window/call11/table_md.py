#!/usr/bin/env python3
"""Call 11's table (893be5c, an H100) as docs/benchmarks.md prints it: this run, its --deterministic
twin, and b939985's table (2026-11-27-half-tiles/call4, the last full table on an H100). The peers of
../shared/PERFORMANCE.md were measured on an H200, so they are not compared here.
scripts/table-md.py does the work."""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
script = here.parents[3] / "scripts/table-md.py"
sys.exit(subprocess.call([sys.executable, str(script), str(here / "r"), str(here / "../../2026-11-27-half-tiles/call4/r/table.csv"), "b939985"]))
