"""Cold compile of peers rows on the gpu target: each row compiled in a fresh process whose
perfbot plan cache, CuPy kernel cache and CUDA driver cache start empty, then compiled again in a
second fresh process with the caches the first one filled (warm). The compiler's import is not
timed; parse and compile are, apart, and so is the first run.

    source benchmarks/gpu_env.sh
    python3 benchmarks/cold_compile.py --rows tv:vgg11:32:fp32,tx:llama:4:fp16 --export-dir /tmp/peers_onnx
    python3 benchmarks/cold_compile.py --grid 1/3 --export-dir /tmp/peers_onnx
    python3 benchmarks/cold_compile.py --rows tv:vgg11:32:fp32 --profile     # where the time goes
    python3 benchmarks/cold_compile.py --grid 1/1 --large-only --cold-only --prewarm 8   # every family

Rows are peers.py's (``tv:<model>:<batch>:<dtype>``, ``tx:...``); their ONNX files are exported
first by peers.export (seeded, so the files are the ones peers.py times) into --export-dir, and a
file found there is used as it is. One JSON line a row and process kind goes to
$OUT/cold_compile.log; the table printed last says, per row, parse + compile cold and warm and the
slowest cuDNN plans, against issue 24's goal of 2 s cold, and the NVRTC compiles of the cold
process (``record_kernel_compiles``): how many, and the seconds the lowering's own thread spent in
them; below it, the kernels whose compiles cost most over all rows and where the compiler asked
for them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

from fresh_process import run_json

GOAL_S = 2.0
KERNEL_NAME = re.compile(r"__global__\s+void\s+(\w+)")    # the kernels a CUDA source defines


def compile_once(path: str, batch: int, dtype: str, profile: bool = False) -> dict:
    """Parse and compile ``path`` for the gpu target in this process, then run it once on device
    buffers of zeros (the first run builds what the compile left for it). ``profile``: the
    parse's and the compile's costliest functions too (``profile`` text, cumulative time)."""
    import cProfile

    from compiler.onnx.parser import parse_onnx
    from gpu_row_probe import conv_state, conv_summary     # benchmarks/ is on sys.path
    compiles = record_kernel_compiles()
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    program = parse_onnx(path, batch_size=batch)
    parse_s = time.perf_counter() - t0
    before = conv_state()
    t0 = time.perf_counter()
    program.compile("gpu", fp16=dtype == "fp16", offload_copy=False)
    compile_s = time.perf_counter() - t0
    if prof:
        prof.disable()
    convs = conv_summary(before)
    from compiler.targets.gpu import backend
    xp = backend.load().xp
    args = [xp.zeros(p.shape.lens, dtype=p.shape.dtype) for p in program.main.parameters()]
    t0 = time.perf_counter()
    program.compiled.run_raw(args)
    if backend.load().on_gpu:
        xp.cuda.Device().synchronize()
    out = {"parse_s": round(parse_s, 3), "compile_s": round(compile_s, 3),
           "first_run_s": round(time.perf_counter() - t0, 3), "plan_s": convs.get("plan_s"),
           "slowest_plans": convs.get("slowest_plans", []), "kernel_compiles": compiles}
    if prof:
        out["profile"] = costliest(prof)
        out["profiled"] = True      # the times above include cProfile's own cost
    return out


def record_kernel_compiles() -> list:
    """Every NVRTC compile CuPy runs in this process from now on (its kernel cache missed), as
    it happens: seconds, thread, the kernels compiled and the compiler's frame that asked for
    them. CuPy's own kernels (``cupy_copy__float32_float32``, one per dtypes and rank) count as
    much as ours: each is a compile of CuPy's headers. An empty list without CuPy."""
    import threading
    import traceback
    records: list = []
    try:
        from cupy.cuda import compiler as cupy_compiler
    except ImportError:
        return records
    inner = cupy_compiler._compile_using_nvrtc_no_warning

    def timed(source, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(source, *args, **kwargs)
        finally:
            ours = [f for f in traceback.extract_stack()[:-1]
                    if f"{os.sep}compiler{os.sep}" in f.filename and "cupy" not in f.filename]
            caller = "-"
            if ours:
                frame = ours[-1]
                caller = f"{frame.filename.split(os.sep + 'compiler' + os.sep, 1)[-1]}:{frame.lineno} {frame.name}"
            records.append({"s": round(time.perf_counter() - t0, 3), "thread": threading.current_thread().name,
                            "kernels": KERNEL_NAME.findall(source)[:3], "caller": caller})
    cupy_compiler._compile_using_nvrtc_no_warning = timed
    return records


def costliest(prof, count: int = 25) -> str:
    """The ``count`` functions of ``prof`` with the most cumulative time, as pstats prints them."""
    import io
    import pstats
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(count)
    return text.getvalue()


def fresh_process(path: str, batch: int, dtype: str, caches: dict, profile: bool = False) -> dict:
    """``compile_once`` in a new Python process with ``caches`` as its cache folders; the
    compiler and CuPy are imported before the clock starts."""
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import cold_compile; "
            "import compiler.onnx.parser, compiler.targets.gpu.lowering; "
            "from compiler.targets.gpu import backend; backend.load(); "
            "print(json.dumps(cold_compile.compile_once(sys.argv[2], int(sys.argv[3]), sys.argv[4], "
            "sys.argv[5] == 'profile')))")
    return run_json(code, [path, str(batch), dtype, "profile" if profile else "-"], env=caches)


def measure(name: str, export_dir: str, profile: bool = False, kinds=("cold", "warm")) -> list[dict]:
    """Row ``name`` cold, then warm, each in a fresh process; the caches live only for the row."""
    import peers
    _model, _inputs, _names, path, batch, dtype = peers.export(name, export_dir)
    with tempfile.TemporaryDirectory(prefix="cold_compile_") as root:
        caches = {var: os.path.join(root, var.lower()) for var in
                  ("PERFBOT_GPU_CACHE", "CUPY_CACHE_DIR", "CUDA_CACHE_PATH")}
        return [{"row": name, "kind": kind, **fresh_process(path, batch, dtype, caches, profile)}
                for kind in kinds]


def table(results: list[dict]) -> str:
    """One line a row: cold and warm parse + compile, the first run, the slowest plan."""
    by_row: dict = {}
    for r in results:
        by_row.setdefault(r["row"], {})[r["kind"]] = r
    lines = [f"{'row':30} {'cold s':>7} {'parse':>6} {'warm s':>7} {'1st run':>7} {'nvrtc':>11}  slowest plan"]
    totals, to_result = [], []
    for row, kinds in by_row.items():
        cold, warm = kinds.get("cold", {}), kinds.get("warm", {})
        if cold.get("status") != "ok":
            lines.append(f"{row:30} error: {cold.get('problem', '-')}")
            continue
        total = cold["parse_s"] + cold["compile_s"]
        totals.append(total)
        to_result.append(total + cold["first_run_s"])
        warm_total = warm["parse_s"] + warm["compile_s"] if warm.get("status") == "ok" else float("nan")
        plan = (cold.get("slowest_plans") or ["-"])[0]
        note = "  (profiled: times inflated)" if cold.get("profiled") else ""
        compiles = cold.get("kernel_compiles", [])
        waited = sum(c["s"] for c in compiles if c["thread"] == "MainThread")
        lines.append(f"{row:30} {total:7.2f} {cold['parse_s']:6.2f} {warm_total:7.2f} {cold['first_run_s']:7.2f} "
                     f"{len(compiles):3} {waited:5.2f} s  {plan[:60]}{note}")
    if totals:
        over = sum(t > GOAL_S for t in totals)
        lines.append(f"cold parse + compile: median {statistics.median(totals):.2f} s, most {max(totals):.2f} s; "
                     f"{over} of {len(totals)} rows over {GOAL_S:.0f} s; to the first result (the first run "
                     f"too): median {statistics.median(to_result):.2f} s, most {max(to_result):.2f} s")
    lines += compile_summary(results)
    return "\n".join(lines)


def compile_summary(results: list[dict], count: int = 12) -> list[str]:
    """The kernels whose cold NVRTC compiles cost the main thread most over all rows, with where
    the compiler asked for them ("nvrtc" above: compiles in the cold process, and the seconds of
    them the lowering's own thread spent)."""
    by_kernel: dict = {}
    for r in results:
        if r.get("kind") != "cold":
            continue
        for c in r.get("kernel_compiles", []):
            key = ((c["kernels"] or ["?"])[0], c["caller"], c["thread"] == "MainThread")
            seen = by_kernel.setdefault(key, [0, 0.0])
            seen[0] += 1
            seen[1] += c["s"]
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[:count]
    return [f"{n:3} x {s:6.2f} s  {'main ' if main else 'ahead'} {kernel[:48]:48} {caller[:60]}"
            for (kernel, caller, main), (n, s) in top]


def main(argv=None) -> int:
    import peers
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="")
    ap.add_argument("--grid", metavar="K/N", help="part K of N of peers.py's family grid instead of --rows")
    ap.add_argument("--export-dir", default=os.path.join(tempfile.gettempdir(), "peers_onnx"))
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--profile", action="store_true",
                    help="each process's parse and compile under cProfile: the costliest functions "
                    "go to cold_compile_profiles.txt (the times then include the profiler's cost)")
    ap.add_argument("--large-only", action="store_true",
                    help="of the grid, only the rows at each family's large batch (a model's compile "
                    "does the same work at batch 1)")
    ap.add_argument("--cold-only", action="store_true", help="no warm process after each cold one")
    ap.add_argument("--prewarm", type=int, default=0, metavar="J",
                    help="export the rows' ONNX files first, in J processes side by side (peers.prewarm)")
    args = ap.parse_args(argv)
    rows = peers.grid_part(args.grid) if args.grid else [r for r in args.rows.split(",") if r]
    if args.large_only:
        rows = [r for r in rows if not r.startswith("tv:") or r.split(":")[2] != "1"]
    if not rows:
        ap.error("name rows with --rows or --grid")
    os.makedirs(args.export_dir, exist_ok=True)
    if args.prewarm:
        for problem in peers.prewarm(rows, args.prewarm, args.export_dir, False, False):
            print(f"export failed: {problem}")
    results = []
    with open(os.path.join(args.out, "cold_compile.log"), "a") as log:
        for name in rows:
            kinds = ("cold",) if args.cold_only else ("cold", "warm")
            for result in measure(name, args.export_dir, args.profile, kinds):
                text = result.pop("profile", None)
                if text:        # --profile: only then is there a profiles file
                    with open(os.path.join(args.out, "cold_compile_profiles.txt"), "a") as profiles:
                        profiles.write(f"== {name} ({result['kind']})\n{text}\n")
                log.write(json.dumps(result) + "\n")
                log.flush()
                results.append(result)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
