"""Where a row's GPU time goes, kernel by kernel: the row's compiled program runs eagerly (no CUDA
graphs, so every kernel is its own launch) under the PyTorch profiler, whose CUPTI tracing sees
every kernel of the process, CuPy's and cuBLAS's and cuDNN's included. Prints the costliest
kernels with their share of the GPU time, and the total kernel time per run against the wall time.

Run on the GPU machine (PyTorch present there):

    source benchmarks/gpu_env.sh
    PERFBOT_GPU_GRAPHS=0 python3 benchmarks/gpu_kernel_profile.py --rows torchvision-densenet121_fp16

``--compile`` profiles the rows' compiles instead (cProfile): where the compile's seconds go.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def profile(row, runs: int, top: int) -> dict:
    import cupy
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    program, args = _compiled(row)
    for _ in range(2):
        program.compiled.run_raw(args)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            program.compiled.run_raw(args)
        cupy.cuda.Device().synchronize()
    wall = (time.perf_counter() - t0) / runs
    torch.cuda.synchronize()
    return {"row": getattr(row, "name", row), "wall_ms": round(wall * 1e3, 3), **_kernel_table(prof, runs, top)}


def _compiled(row):
    """A suite row, or a peers.py row name (``tv:`` or ``tx:<model>:<batch>:<dtype>``), compiled for the gpu
    target with its arguments on device buffers."""
    if isinstance(row, str):
        import cupy
        from ours_process import compiled
        from peers import export
        _model, inputs, input_names, path, batch, dtype = export(row)
        return compiled(path, batch, dtype, {n: t.numpy() for n, t in zip(input_names, inputs)}, cupy)
    from compiler.onnx.parser import parse_onnx
    from gpu_row_probe import device_args
    from models.cache import build_model
    from models.inputs import make_feeds
    path = build_model(row)
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    program.compile("gpu", fp16=row.mode == "fp16", offload_copy=False)
    return program, device_args(program, make_feeds(row, path))


def _kernel_table(prof, runs: int, top: int) -> dict:
    """Per-run GPU time of every kernel the profiler saw: the total, the launches, the costliest."""
    kernels = {}
    for ev in prof.key_averages():
        us = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if us:
            kernels[ev.key] = (us / runs, ev.count // runs)
    total = sum(us for us, _ in kernels.values())
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]
    return {"kernel_ms": round(total / 1e3, 3), "launches": sum(c for _, c in kernels.values()),
            "top": [{"kernel": k[:90], "ms": round(us / 1e3, 3), "share": round(us / total, 3), "count": c}
                    for k, (us, c) in ranked]}


def torch_profile(name: str, runs: int, top: int) -> dict:
    """The PyTorch counterpart of row ``name`` (``peers.py``'s model, random weights, PyTorch's
    default arithmetic: TF32 convolutions for fp32), eager, kernel by kernel."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from peers import on_device, row_spec
    builder, batch, dtype = row_spec(name)
    model, inputs, _names = builder(batch)
    model, tin = on_device(torch, model.eval(), inputs, dtype)
    with torch.no_grad():
        for _ in range(3):
            model(*tin)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(runs):
                model(*tin)
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / runs
    return {"row": f"torch:{name}", "batch": batch, "mode": dtype, "wall_ms": round(wall * 1e3, 3),
            **_kernel_table(prof, runs, top)}


def compile_profile(row, top: int) -> dict:
    """Where row ``row``'s compile goes (cProfile around ``Program.compile`` for the gpu target):
    the functions with the most own time and, among the compiler's own, the most time with callees.
    Run it in a process with empty kernel caches for the cold figure."""
    import cProfile
    import pstats

    from compiler.onnx.parser import parse_onnx
    if isinstance(row, str):
        from peers import export
        _model, _inputs, _names, path, batch, dtype = export(row)
        fp16, name = dtype == "fp16", row
    else:
        from models.cache import build_model
        path, batch, fp16, name = str(build_model(row)), row.batch, row.mode == "fp16", row.name
    t0 = time.perf_counter()
    program = parse_onnx(str(path), batch_size=batch, dims={"batch": batch})
    parse_s = time.perf_counter() - t0
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    program.compile("gpu", fp16=fp16, offload_copy=False)
    prof.disable()
    compile_s = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats   # (file, line, function) -> (calls, ncalls, own, cumulative, callers)

    def label(key):
        file, line, func = key
        return f"{os.path.relpath(file) if file.startswith(os.getcwd()) else os.path.basename(file)}:{line}:{func}"
    own = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    ours = [kv for kv in stats.items() if kv[0][0].startswith(os.path.join(os.getcwd(), "compiler"))]
    cumulative = sorted(ours, key=lambda kv: -kv[1][3])[:top]
    return {"row": f"compile:{name}", "parse_s": round(parse_s, 3), "compile_s": round(compile_s, 3),
            "own": [{"function": label(k), "s": round(v[2], 3), "calls": v[1]} for k, v in own],
            "cumulative": [{"function": label(k), "s": round(v[3], 3), "calls": v[1]} for k, v in cumulative]}


def suite_or_peers_row(name: str, suite_rows: dict):
    """``tv:`` and ``tx:`` names are peers.py rows (kept as the string); every other name is a
    suite row."""
    if name.startswith(("tv:", "tx:")):
        return name
    if name not in suite_rows:
        raise KeyError(f"{name} is neither a suite row nor a tv:/tx: peers row")
    return suite_rows[name]


def _profile_logged(name: str, args) -> dict:
    """``profile`` of row ``name`` (suite, ``tv:`` or ``tx:``), appended to the JSON-lines log; a row that
    raises becomes that row's problem line."""
    import json
    from models.manifest import load_manifest
    try:
        row = suite_or_peers_row(name, {r.name: r for r in load_manifest().suite("default")})
        result = compile_profile(row, args.top) if args.compile else profile(row, args.runs, args.top)
    except Exception as exc:  # noqa: BLE001 - one row's failure is that row's line
        result = {"row": name, "problem": f"{type(exc).__name__}: {exc}"[:300]}
    with open(os.path.join(args.out, "gpu_kernel_profile.jsonl"), "a") as f:
        f.write(json.dumps(result) + "\n")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--torch", action="store_true", help="profile the rows' PyTorch counterparts instead")
    ap.add_argument("--compile", action="store_true", help="profile the rows' compiles instead (cProfile)")
    args = ap.parse_args(argv)
    if args.torch:
        import json
        results = []
        for name in args.rows.split(","):
            results.append(torch_profile(name, args.runs, args.top))
            with open(os.path.join(args.out, "gpu_kernel_profile.jsonl"), "a") as f:
                f.write(json.dumps(results[-1]) + "\n")
    else:
        results = [_profile_logged(name, args) for name in args.rows.split(",")]
    for result in results:
        if args.compile:
            _print_compile(result)
            continue
        print(f"== {result['row']}: wall {result.get('wall_ms')} ms/run, kernels {result.get('kernel_ms')} ms/run, "
              f"{result.get('launches')} launches {result.get('problem', '')}")
        for k in result.get("top", []):
            print(f"   {k['ms']:8.3f} ms {k['share']:6.1%} x{k['count']:<5d} {k['kernel']}")
    return 0


def _print_compile(result: dict) -> None:
    print(f"== {result['row']}: parse {result.get('parse_s')} s, compile {result.get('compile_s')} s "
          f"{result.get('problem', '')}")
    for title in ("own", "cumulative"):
        print(f"   -- by {title} time")
        for f in result.get(title, []):
            print(f"   {f['s']:8.3f} s x{f['calls']:<6d} {f['function'][:120]}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
