"""Process-to-process spread of a run's rows: how far the medians of fresh worker processes of
the same code land apart. Take the run with ``perfbot run --rounds K`` (one process per round),
then:

    python3 benchmarks/process_spread.py results.json [more.json ...] [--json OUT]

Prints per row: the rate (median of the process medians), the host-fed end-to-end rate, the
number of processes, the standard deviation of their medians and their range, both relative to
the rate, and how each sample was taken. ``--pooled`` takes the processes of a row (same name,
batch and mode) from every file together: the base and head runs of a same-commit ``perfbot ab``
(exported with ``perfbot results export``) are processes of one code, so an A/A gives each row's
spread over both sides' processes.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.compare.measurement import independent_samples  # noqa: E402
from bot.results_doc import load_results  # noqa: E402


def pooled_rows(rows: list[dict]) -> list[dict]:
    """One row for each (name, batch, mode): one sample a process (its median) from every row
    given, each in a block of its own, so that processes of different runs stay apart; rate and
    end-to-end rate the medians over them, the first row's other fields."""
    out: dict = {}
    for row in rows:
        key = (row["name"], row["batch"], row["mode"])
        medians, _ = independent_samples(row)
        merged = out.setdefault(key, {**row, "samples": [], "blocks": [], "e2e": []})
        merged["blocks"].extend(range(len(merged["samples"]), len(merged["samples"]) + len(medians)))
        merged["samples"].extend(medians)
        if isinstance(row.get("e2e_rate"), (int, float)):
            merged["e2e"].append(row["e2e_rate"])
    for merged in out.values():
        merged["rate"] = statistics.median(merged["samples"]) if merged["samples"] else None
        e2e = merged.pop("e2e")
        merged["e2e_rate"] = statistics.median(e2e) if e2e else None
    return list(out.values())


def spread(row: dict) -> dict:
    medians, _ = independent_samples(row)
    out = {"row": row["name"], "batch": row["batch"], "mode": row["mode"], "rate": row.get("rate"),
           "e2e_rate": row.get("e2e_rate"), "processes": len(medians),
           "unreliable": row.get("unreliable"), "status": row["status"]}
    if len(medians) >= 2:
        center = statistics.median(medians)
        out["sd_pct"] = statistics.stdev(medians) / center * 100
        out["range_pct"] = (max(medians) - min(medians)) / center * 100
    sampling = row.get("sampling") or {}
    out["runs_per_sample"] = sampling.get("runs_per_sample")
    out["method"] = sampling.get("method")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--json", help="also write the table here")
    ap.add_argument("--pooled", action="store_true",
                    help="a row's processes from every file together (the two runs of an A/A)")
    args = ap.parse_args(argv)
    rows = [r for f in args.files for r in load_results(f)["rows"]]
    table = [spread(r) for r in (pooled_rows(rows) if args.pooled else rows)]
    print(f"{'row':34s} {'b':>3s} {'mode':4s} {'rate':>10s} {'e2e':>10s} {'n':>3s} {'sd%':>6s} "
          f"{'range%':>7s}  method / unreliable")
    for r in table:
        fmt = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"  # noqa: E731
        print(f"{r['row'][:34]:34s} {r['batch']:3d} {r['mode']:4s} {fmt(r['rate'], '10.1f')} "
              f"{fmt(r['e2e_rate'], '10.1f')} {r['processes']:3d} {fmt(r.get('sd_pct'), '6.2f')} "
              f"{fmt(r.get('range_pct'), '7.2f')}  {r['method']} {r['unreliable'] or ''}"
              f"{'' if r['status'] == 'ok' else ' ERROR'}")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
