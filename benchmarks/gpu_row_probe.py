"""One row at a time on the gpu target, taken apart: where compile time goes, how the convolution
plans were chosen, the replayed rate on device buffers, and the error against ONNX Runtime.

Run on the GPU machine, one process per configuration (``GpuOptions`` variables such as
PERFBOT_GPU_AUTOTUNE, PERFBOT_GPU_FP32_CONV or PERFBOT_GPU_TF32 are read at compile time):

    source benchmarks/gpu_env.sh
    python3 benchmarks/gpu_row_probe.py --rows torchvision-resnet50_1 [--profile] [--label NAME]

Prints one JSON line per row; with --profile the log also holds the compile's 20 costliest
functions (own time) and its 40 costliest calls (time including callees).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time



def conv_state() -> tuple:
    """What the process has planned so far (cuDNN graphs by spec, refusals), with the record of
    fp32 path choices emptied: taken before a row's compile, so ``conv_summary`` counts that row's
    own (a probe process compiles its rows one after another)."""
    from compiler.targets.gpu import conv_choice
    from compiler.targets.gpu.kernels import conv as convk
    conv_choice.choices.clear()
    return set(convk.made_graphs()), len(convk.failures)


def conv_summary(before: tuple) -> dict:
    """How the cuDNN convolution graphs this row's compile added were planned, and which path
    each of its fp32 convolutions took."""
    from compiler.targets.gpu.kernels import conv as convk
    seen, refused = before
    new = {key: g for key, g in convk.made_graphs().items() if key not in seen}
    built = [g for g in new.values() if g is not None]
    out = {"unique_convs": len(new), "refused": len(convk.failures) - refused}
    for g in built:
        out[g.tuned] = out.get(g.tuned, 0) + 1
    out["gate_rejected"] = sum(getattr(g, "rejected", 0) for g in built)
    out["runtime_compiled"] = sum(g.runtime_compiled() is True for g in built)
    out["plan_s"] = round(sum(g.seconds for g in built), 3)
    slowest = sorted(built, key=lambda g: -g.seconds)[:3]
    out["slowest_plans"] = [f"{g.seconds:.3f}s rc={g.runtime_compiled()} "
                            f"{plan_name(g.spec)}" for g in slowest]
    from compiler.targets.gpu import conv_choice
    for _spec, path, _timed in conv_choice.choices:
        out[f"fp32:{path}"] = out.get(f"fp32:{path}", 0) + 1
    return out


def plan_name(spec) -> str:
    """A cuDNN graph's shapes, types and epilogue on one line."""
    types = spec.dtype + (f"/{spec.inputs}" if spec.inputs else "")
    epilogue = [name for name, on in (("bias", spec.bias), ("res", spec.residual), ("relu", spec.relu)) if on]
    return " ".join([f"x{spec.x_shape}", f"w{spec.w_shape}", types, *epilogue])


def conv_timings() -> list[str]:
    """One line per fp32 convolution timed since ``conv_state``: its shape and each path's time."""
    from compiler.targets.gpu import conv_choice
    lines = []
    for spec, path, timed in conv_choice.choices:
        if timed:
            shape = f"x{spec.x_shape} w{spec.w_shape} s{spec.strides}"
            lines.append(f"{shape} -> {path}: " + ", ".join(f"{p} {ms:.4f}" for p, ms in sorted(timed.items())))
    return lines


def device_args(program, feeds: dict) -> list:
    """``main``'s arguments on the device: the feeds, and empty buffers for its outputs."""
    import cupy
    return [cupy.asarray(feeds[p.name]) if p.name in feeds else cupy.empty(p.shape.lens, dtype=p.shape.dtype)
            for p in program.main.parameters()]


def device_rate(program, args: list, seconds: float) -> tuple[float, list]:
    """Median seconds of one replayed run with inputs and outputs already on the device."""
    import cupy
    for _ in range(3):
        outs = program.compiled.run_raw(args)
    cupy.cuda.Device().synchronize()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 500):
        t = time.perf_counter()
        program.compiled.run_raw(args)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times), [cupy.asnumpy(o) for o in outs]


def probe(row, seconds: float, profile: bool) -> dict:
    from bot.runner.accuracy import compare_outputs, reference_outputs
    from models.cache import build_model
    from models.inputs import make_feeds

    from compiler.onnx.parser import parse_onnx
    from gpu_suite import replay_state   # benchmarks/ is the script's own folder on sys.path
    path = build_model(row)
    feeds = make_feeds(row, path)
    out = {"row": row.name, "batch": row.batch, "mode": row.mode}
    t0 = time.perf_counter()
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    out["parse_s"] = round(time.perf_counter() - t0, 3)
    prof = cProfile.Profile() if profile else None
    before = conv_state()
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    program.compile("gpu", fp16=row.mode == "fp16", offload_copy=False)
    if prof:
        prof.disable()
    out["compile_s"] = round(time.perf_counter() - t0, 3)
    out["convs"] = conv_summary(before)
    out["conv_timings_ms"] = conv_timings()
    import cupy
    args = device_args(program, feeds)
    t0 = time.perf_counter()
    program.compiled.run_raw(args)
    cupy.cuda.Device().synchronize()
    out["first_run_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    program.compiled.run_raw(args)
    cupy.cuda.Device().synchronize()
    out["record_s"] = round(time.perf_counter() - t0, 3)
    med, ours = device_rate(program, args, seconds)
    out["median_ms"] = round(med * 1e3, 3)
    out["rate"] = round(row.batch / med, 1)
    roots = program.compiled.context.roots
    out["graphs"] = [replay_state(r) for r in roots.values()]
    acc = compare_outputs(ours, reference_outputs(path, feeds), row.rtol, row.atol)
    out["status"] = "ok" if acc.status == "PASSED" else "inaccurate"
    out["max_abs_err"] = acc.as_row().get("max_abs_err")
    out["max_rel_err"] = acc.as_row().get("max_rel_err")
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(20)
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
        out["profile"] = text.getvalue()
    return out


def each_row(names: str, measure, log_path: str):
    """``measure(row)`` for every named row of the default suite, one at a time; a row that raises
    becomes that row's error line. Yields each result after appending it to ``log_path`` (JSON
    lines; a result's ``profile`` text, if any, goes to the log after its line)."""
    import cupy

    from models.manifest import load_manifest
    rows = {r.name: r for r in load_manifest().suite("default")}
    with open(log_path, "a") as log:
        for name in names.split(","):
            try:
                result = measure(rows[name])
            except Exception as exc:  # noqa: BLE001 - one row's failure is that row's line
                result = {"row": name, "status": "error", "problem": f"{type(exc).__name__}: {exc}"[:300]}
            profile = result.pop("profile", None)
            log.write(json.dumps(result) + "\n")
            if profile:
                log.write(profile)
            log.flush()
            cupy.get_default_memory_pool().free_all_blocks()
            yield result


def table(log_path: str) -> str:
    """One line per probe in ``log_path``: row, label, rate, compile time, error, status."""
    lines = []
    for text in open(log_path):
        if text.startswith("{"):
            r = json.loads(text)
            lines.append(f"{r['row']:30} {r.get('label', ''):10} {r.get('rate', 0):9.1f} {r.get('compile_s', 0):6.2f} "
                         f"{r.get('max_abs_err', '-')!s:>22} {r.get('status')} {r.get('problem', '')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--table", action="store_true", help="print the table of the probes logged so far")
    args = ap.parse_args(argv)
    log_path = os.path.join(args.out, "gpu_row_probe.log")
    if args.table:
        print(table(log_path))
        return 0
    for result in each_row(args.rows, lambda row: {**probe(row, args.seconds, args.profile), "label": args.label},
                           log_path):
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
