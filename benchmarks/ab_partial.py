"""The comparison of a `perfbot ab` that was stopped before it finished (a device command's time
limit): its base and head runs as the database holds them, every row measured so far, compared
with `perfbot compare --no-history`. `perfbot ab` creates the base run, then the head run, so
the database's two newest runs are head and base.

    python3 benchmarks/ab_partial.py sqlite:///OUT/aa.db --out OUT/aa-LABEL.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def _bot(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "bot", *args], check=True, capture_output=True,
                          text=True).stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", help="the A/B's results database (SQLAlchemy URL)")
    ap.add_argument("--out", required=True, help="where the comparison (JSON) goes")
    args = ap.parse_args(argv)
    runs = json.loads(_bot("results", "list", "--db", args.db, "--limit", "2", "--format", "json"))
    if len(runs) < 2:
        print(f"{args.db}: fewer than two runs, nothing to compare", file=sys.stderr)
        return 1
    head, base = runs[0]["id"], runs[1]["id"]
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for side, run in (("base", base), ("head", head)):
            files[side] = os.path.join(folder, f"{side}.json")
            _bot("results", "export", run, "--db", args.db, "--out", files[side])
        compared = subprocess.run([sys.executable, "-m", "bot", "compare", "--base", files["base"], "--head",
                                   files["head"], "--no-history", "--format", "json", "--out", args.out])
    print(f"partial A/B: base {base}, head {head}, compared into {args.out}")
    return 0 if compared.returncode in (0, 1) else compared.returncode   # 1: not recommended


if __name__ == "__main__":
    sys.exit(main())
