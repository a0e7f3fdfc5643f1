"""The default suite on the gpu target: build, compile, check against ONNX Runtime, time.

Run on the GPU machine (models are built there, never carried):

    source benchmarks/gpu_env.sh
    python3 benchmarks/gpu_suite.py [--rows a,b] [--out DIR] [--seconds S]

ONNX Runtime (CPU) computes each row's reference in a background thread while the GPU compiles and
times the row, so the two overlap. Prints a table last; writes ``gpu_suite.json`` and a log to
``--out``.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np


def _time_runs(program, feeds, seconds: float, min_runs: int = 3, max_runs: int = 200):
    import cupy
    program.run(feeds)  # warm-up: kernels compiled, plans built, pool filled
    cupy.cuda.Device().synchronize()
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < seconds and len(times) < max_runs):
        t = time.perf_counter()
        program.run(feeds)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return times


def replay_state(root) -> str:
    """How a compiled root runs: "replay" (CUDA graphs) with its graph and eager segments,
    "eager", or why recording failed."""
    recorded = getattr(root, "graphs", None)
    if recorded is None:
        return getattr(root, "graph_error", None) or "eager"
    kinds = [seg[0] for seg in recorded.segments]
    return f"replay ({kinds.count('graph')} graphs, {kinds.count('eager')} eager steps)"


def run_row(row, ref_pool, seconds: float, log, warm_compile: bool = False) -> dict:
    import cupy

    from bot.runner.accuracy import compare_outputs, reference_outputs
    from models.cache import build_model
    from models.inputs import make_feeds

    from compiler.onnx.parser import parse_onnx

    out = {"row": row.name, "batch": row.batch, "mode": row.mode, "status": "error"}
    t0 = time.perf_counter()
    path = build_model(row)
    out["build_s"] = round(time.perf_counter() - t0, 2)
    feeds = make_feeds(row, path)
    ref_future = ref_pool.submit(reference_outputs, path, feeds)
    t0 = time.perf_counter()
    # Symbolic dims named "batch" outside the first axis (sequence-first RNN inputs) too.
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    program.compile("gpu", fp16=row.mode == "fp16")
    out["compile_s"] = round(time.perf_counter() - t0, 2)
    roots = program.compiled.context.roots
    out["host_fallbacks"] = sorted({f for r in roots.values() for f in getattr(r, "host_fallbacks", [])})
    out["peak_bytes"] = sum(getattr(r, "peak_bytes", 0) for r in roots.values())
    out["literal_bytes"] = sum(getattr(r, "literal_bytes", 0) for r in roots.values())
    t0 = time.perf_counter()
    eager = [np.asarray(o) for o in program.run(feeds)]      # run 1: eager (kernels compile)
    out["first_run_s"] = round(time.perf_counter() - t0, 2)
    program.run(feeds)                                        # run 2: recorded into CUDA graphs
    ours = [np.asarray(o) for o in program.run(feeds)]       # run 3: replayed, what is timed
    out["graphs"] = [replay_state(r) for r in roots.values()]
    out["eager_vs_replay_max_diff"] = max(
        (float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) for a, b in zip(eager, ours)
         if a.size), default=0.0)
    scale = max((float(np.max(np.abs(a))) for a in eager if a.size), default=1.0)
    if out["eager_vs_replay_max_diff"] > row.atol + row.rtol * scale:
        # A replay that disagrees with the eager run is a bug in recording: measure eagerly.
        out["graphs"] = [f"replay mismatch {out['eager_vs_replay_max_diff']:.3g}; measured eager"]
        program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
        program.compile("gpu", fp16=row.mode == "fp16", cuda_graphs=False)
        ours = [np.asarray(o) for o in program.run(feeds)]
    if warm_compile:
        t0 = time.perf_counter()
        again = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
        again.compile("gpu", fp16=row.mode == "fp16")
        out["warm_compile_s"] = round(time.perf_counter() - t0, 2)
        del again
    times = _time_runs(program, feeds, seconds)
    med = statistics.median(times)
    out["median_ms"] = round(med * 1e3, 3)
    out["rate"] = round(row.batch / med, 1)
    out["runs"] = len(times)
    reference = ref_future.result()
    acc = compare_outputs(ours, reference, row.rtol, row.atol)
    out["accuracy"] = acc.as_row()
    out["problem"] = acc.problem
    out["status"] = "ok" if acc.status == "PASSED" else "inaccurate"
    log.write(json.dumps(out) + "\n")
    log.flush()
    del program
    cupy.get_default_memory_pool().free_all_blocks()
    return out


WARM_COMPILE = {"torchvision-resnet50", "torchvision-resnet50_1"}


def table(results: list[dict]) -> str:
    lines = [f"{'row':32s} {'status':10s} {'max_abs':>9s} {'max_rel':>9s} {'compile_s':>9s} "
             f"{'rate/s':>9s} {'ms':>9s} {'fallbk':>6s}"]
    for r in results:
        acc = r.get("accuracy") or {}
        fmt = lambda v, f: (f % v) if isinstance(v, (int, float)) else "-"  # noqa: E731
        lines.append(f"{r['row']:32s} {r['status']:10s} {fmt(acc.get('max_abs_err'), '%9.2e')} "
                     f"{fmt(acc.get('max_rel_err'), '%9.2e')} {fmt(r.get('compile_s'), '%9.2f')} "
                     f"{fmt(r.get('rate'), '%9.1f')} {fmt(r.get('median_ms'), '%9.3f')} "
                     f"{len(r.get('host_fallbacks') or []):6d}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="")
    ap.add_argument("--suite", default="default")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args(argv)
    from models.manifest import load_manifest
    manifest = load_manifest()
    rows = manifest.suite(args.suite)
    if args.rows:
        # In the order asked for, so a run cut short by its time limit has done the rows that
        # matter most to whoever picked the order.
        wanted = args.rows.split(",")
        by_name = {r.name: r for r in rows}
        rows = [by_name[n] for n in wanted if n in by_name]
    os.makedirs(args.out, exist_ok=True)
    results = []
    with open(os.path.join(args.out, "gpu_suite.log"), "a") as log, \
            cf.ThreadPoolExecutor(max_workers=1) as ref_pool:
        for row in rows:
            t = time.perf_counter()
            try:
                r = run_row(row, ref_pool, args.seconds, log, warm_compile=row.name in WARM_COMPILE)
            except Exception as exc:  # noqa: BLE001 - one row's failure is that row's status
                r = {"row": row.name, "status": "error", "problem": f"{type(exc).__name__}: {exc}"[:300]}
                log.write(json.dumps(r) + "\n" + traceback.format_exc() + "\n")
                log.flush()
            r["wall_s"] = round(time.perf_counter() - t, 1)
            results.append(r)
            print(f"[{r['wall_s']:6.1f}s] {row.name}: {r['status']} {r.get('problem') or ''} "
                  f"fallbacks={r.get('host_fallbacks')}", flush=True)
    with open(os.path.join(args.out, "gpu_suite.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "results": results}, f, indent=1)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
