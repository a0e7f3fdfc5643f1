"""A newcomer's loop on one commit, repeated: `perfbot run` twice, then `perfbot compare` of the two.

Nothing changed between the two runs, so every 🔴 or 🔆 is a false alarm. Each repetition uses a
fresh results database (no stored history narrows or widens the judgement), and the runs are taken
the way the README tells a user to keep a baseline (`--rounds`: one worker process per round).

    python benchmarks/same_commit_loop.py --repeats 10 --suite smoke --rounds 5 --out loop.json

It prints one line per repetition (rows flagged, rows judged, verdict) and a total; the per-row
differences and p-values of every comparison go to --out.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = ("regression", "improvement")


def perfbot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True)


def measured_run(db: str, suite: str, rounds: int, target: str) -> str:
    done = perfbot("run", "--suite", suite, "--rounds", str(rounds), "--target", target, "--db", db,
                   "--quiet", "--format", "json")
    if done.returncode != 0:
        raise SystemExit(f"perfbot run failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)["run"]["id"]


def one_repetition(work: Path, index: int, args) -> dict:
    db = f"sqlite:///{work / f'loop-{index}.db'}"
    base = measured_run(db, args.suite, args.rounds, args.target)
    head = measured_run(db, args.suite, args.rounds, args.target)
    done = perfbot("compare", "--base", base, "--head", head, "--db", db, "--format", "json")
    if done.returncode not in (0, 1):
        raise SystemExit(f"perfbot compare failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def summary(comparison: dict) -> dict:
    """Rates flagged, and compile times and peaks flagged (``compile:NAME``, ``peak_mem:NAME``):
    every mark the verdict counts; rows not judged, and of them those the machine's own shift
    left unjudged."""
    rows = comparison["rows"]
    resources = [f"{figure}:{r['name']}" for r in rows for figure in ("compile", "peak_mem")
                 if r.get(f"{figure}_mark") in FLAGS]
    return {"flagged": [r["name"] for r in rows if r["mark"] in FLAGS] + resources,
            "machine_shifted": sum("the machine itself ran" in (r.get("reason") or "") for r in rows),
            "shifts": {r["name"]: r.get("machine_shift_pct") for r in rows},
            "judged": sum(1 for r in rows if r.get("judged")), "rows": len(rows),
            "verdict": comparison["verdict"],
            "diffs": {r["name"]: r.get("diff_pct") for r in rows}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(args.repeats):
            started = time.monotonic()
            comparison = one_repetition(Path(tmp), index, args)
            line = summary(comparison) | {"seconds": round(time.monotonic() - started, 1)}
            results.append(line | {"comparison": comparison})
            print(f"{index + 1:2d}: {len(line['flagged'])} flagged {line['flagged']}, "
                  f"{line['judged']}/{line['rows']} judged ({line['machine_shifted']} not: machine shift), "
                  f"{line['verdict']}, {line['seconds']} s",
                  flush=True)
    flagged = sum(len(r["flagged"]) for r in results)
    print(f"total: {flagged} rows flagged in {len(results)} same-commit comparisons")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
