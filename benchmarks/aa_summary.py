"""Issue 22's A/A criteria over same-commit ``perfbot ab`` runs (their compare documents, JSON).

    python3 benchmarks/aa_summary.py PART1.json PART2.json ... [--format markdown|json]

A whole-suite A/A does not fit one device command, so it runs in parts (``gpu_session.sh
aa:K/N:LABEL``: rows K, K+N, ... of the default suite), each one ``perfbot ab --base HEAD --head
HEAD`` with default settings. This takes the parts of one A/A together and checks what issue 22
asks of it: median |Diff| <= 0.3 %, every row at batch >= 8 within 1 %, every batch-1 row within
2 %, and no row flagged (rate, compile time or peak memory); a row at another batch (unet_fp16 at
2) counts in the median and the flags only. A row measured in two parts counts once, from the
later file.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

MEDIAN_LIMIT, LARGE_LIMIT, SMALL_LIMIT = 0.3, 1.0, 2.0
FLAG_FIELDS = ("mark", "compile_mark", "peak_mem_mark")
FLAGGED = ("regression", "improvement")


def rows_of(docs) -> list[dict]:
    """The rows of the compare documents, one per (name, batch, mode), the later one kept."""
    found: dict = {}
    for doc in docs:
        for row in doc.get("rows", []):
            found[(row.get("name"), row.get("batch"), row.get("mode"))] = row
    return list(found.values())


def flags(row: dict) -> list[str]:
    return [f"{field}={row[field]}" for field in FLAG_FIELDS if row.get(field) in FLAGGED]


def check(rows: list[dict]) -> dict:
    """The criteria, each with the figure it was judged on and whether it is met."""
    measured = [(abs(r["diff_pct"]), r.get("batch") or 0) for r in rows if isinstance(r.get("diff_pct"), (int, float))]
    diffs = [d for d, _b in measured]
    large = [d for d, b in measured if b >= 8]
    small = [d for d, b in measured if b == 1]
    flagged = [(r.get("name"), flags(r)) for r in rows if flags(r)]
    errors = [r.get("name") for r in rows if r.get("mark") == "error"]
    median = statistics.median(diffs) if diffs else None
    return {
        "rows": len(rows), "errors": errors, "flagged": flagged,
        "median_abs_diff_pct": median, "median_met": median is not None and median <= MEDIAN_LIMIT,
        "max_abs_diff_batch_ge_8_pct": max(large, default=None),
        "batch_ge_8_met": all(d <= LARGE_LIMIT for d in large),
        "max_abs_diff_batch_1_pct": max(small, default=None),
        "batch_1_met": all(d <= SMALL_LIMIT for d in small),
        "none_flagged": not flagged and not errors,
    }


def _pct(value) -> str:
    return "–" if value is None else f"{value:+.2f} %"


def markdown(rows: list[dict]) -> str:
    out = ["| row | batch | Diff | p | flags |", "|---|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: -abs(r.get("diff_pct") or 0)):
        p = r.get("p_value")
        out.append(f"| {r.get('name')} | {r.get('batch')} | {_pct(r.get('diff_pct'))} "
                   f"| {'–' if p is None else f'{p:.3g}'} | {', '.join(flags(r)) or r.get('mark', '')} |")
    c = check(rows)
    out += ["", f"{c['rows']} rows. Median |Diff| {_pct(c['median_abs_diff_pct'])} (<= {MEDIAN_LIMIT} %: "
            f"{'met' if c['median_met'] else 'not met'}); largest at batch >= 8 "
            f"{_pct(c['max_abs_diff_batch_ge_8_pct'])} (<= {LARGE_LIMIT} %: {'met' if c['batch_ge_8_met'] else 'not met'}); "
            f"largest at batch 1 {_pct(c['max_abs_diff_batch_1_pct'])} (<= {SMALL_LIMIT} %: "
            f"{'met' if c['batch_1_met'] else 'not met'}); flagged or failed: "
            f"{'none' if c['none_flagged'] else ', '.join([n for n, _f in c['flagged']] + c['errors'])}."]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", nargs="+", help="compare documents of one A/A's parts, oldest first")
    ap.add_argument("--format", choices=("markdown", "json"), default="markdown")
    args = ap.parse_args(argv)
    docs = []
    for path in args.docs:
        try:
            with open(path, encoding="utf-8") as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as exc:   # a part whose A/B failed left no document
            print(f"skipped {path}: {exc}", file=sys.stderr)
    rows = rows_of(docs)
    print(json.dumps(check(rows), indent=1) if args.format == "json" else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
