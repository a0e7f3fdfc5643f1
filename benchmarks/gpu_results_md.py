"""Markdown tables for benchmarks/RESULTS.md from gpu_suite.json and peers.log.

    python3 benchmarks/gpu_results_md.py SUITE_JSON [PEERS_LOG]
"""
from __future__ import annotations

import json
import sys


def suite_table(path: str) -> str:
    doc = json.load(open(path))
    lines = ["| row | status | max abs err | max rel err | compile s | rate (/s) | median ms | run mode |",
             "|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        a = r.get("accuracy") or {}
        f = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "–"  # noqa: E731
        mode = ", ".join(r.get("graphs") or []) or "–"
        status = r["status"] if not r.get("problem") or r["status"] == "ok" else f"{r['status']}: {r['problem'][:80]}"
        lines.append(f"| {r['row']} | {status} | {f(a.get('max_abs_err'), '.2e')} | "
                     f"{f(a.get('max_rel_err'), '.2e')} | {f(r.get('compile_s'), '.2f')} | "
                     f"{f(r.get('rate'), ',.1f')} | {f(r.get('median_ms'), '.3f')} | {mode} |")
    return "\n".join(lines)


def peers_table(path: str) -> str:
    rows = [json.loads(line) for line in open(path) if line.strip().startswith("{")]
    cols = ["ours_rate", "eager_rate", "eager_graph_rate", "torch_compile_rate", "ratio_vs_eager",
            "ratio_vs_eager_graph", "ratio_vs_torch_compile", "compile_s", "torch_compile_s"]
    lines = ["| row | batch | dtype | " + " | ".join(cols) + " |", "|---" * (len(cols) + 3) + "|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['row']} | | | error: {r['error'][:100]} |")
            continue
        lines.append(f"| {r['row']} | {r['batch']} | {r['dtype']} | " +
                     " | ".join(str(r.get(c, "–")) for c in cols) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(suite_table(sys.argv[1]))
    if len(sys.argv) > 2:
        print()
        print(peers_table(sys.argv[2]))
