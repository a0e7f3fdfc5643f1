"""Do cuDNN plans built off the GIL (the backend API through ctypes) compile side by side? Run on
the GPU machine; each case is a fresh process with its own empty driver cache (CUDA_CACHE_PATH).

Cases, on ResNet-50's batch-64 split-bf16 3x3 convolutions (7 distinct, zeros-residual form):
  frontend      the frontend's build, one plan after another (what a cold compile does now)
  backend:N     the backend build on N threads; then each plan run against the frontend's plan
                (built after it, in the same process) on random inputs, both timed
  reload        the backend plans read back from their JSON text in a fresh process (and run)

    source benchmarks/gpu_env.sh; python3 benchmarks/cudnn_parallel_build.py [--threads 1,8] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

RESNET50_3X3 = [  # (channels, height/width in, stride) of ResNet-50's 3x3 convolutions at batch 64
    (64, 56, 1), (128, 56, 2), (128, 28, 1), (256, 28, 2), (256, 14, 1), (512, 14, 2), (512, 7, 1)]


def split_specs(batch: int = 64):
    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels import split_bf16
    specs = []
    for c, hw, stride in RESNET50_3X3:
        c3 = split_bf16.width(c)
        specs.append(convk.ConvSpec((batch, c3, hw, hw), (c, c3, 3, 3), (1, 1), (1, 1), (stride, stride), (1, 1), 1,
                                    "float32", bias=True, relu=True, nhwc=True, inputs="bfloat16"))
    return specs


def _operands(cupy, spec, seed):
    from compiler.targets.gpu.kernels import conv as convk
    rng = cupy.random.default_rng(seed)

    def bf16(lens):
        return (rng.standard_normal(lens, dtype=cupy.float32).view(cupy.uint32) >> 16).astype(cupy.uint16)
    x = bf16(convk._storage(spec.x_shape, True))
    w = bf16(convk._storage(spec.w_shape, True))
    b = rng.standard_normal((spec.w_shape[0],), dtype=cupy.float32)
    return x, w, b


def _event_ms(cupy, fn, reps=20):
    fn()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / reps


def case_frontend(specs):
    from compiler.targets.gpu.kernels import conv as convk
    each = []
    t0 = time.perf_counter()
    for s in specs:
        t = time.perf_counter()
        convk.CudnnConv(s)
        each.append(round(time.perf_counter() - t, 3))
    return {"wall_s": round(time.perf_counter() - t0, 3), "each_s": each}


def case_backend(specs, threads, json_dir):
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels import cudnn_backend as cb
    device = cupy.cuda.Device().id

    def build(spec):
        handle = cb.thread_handle(device)
        t = time.perf_counter()
        plan = cb.BackendPlan(spec, handle)
        return plan, round(time.perf_counter() - t, 3)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        built = list(pool.map(build, specs))
    wall = time.perf_counter() - t0
    out = {"wall_s": round(wall, 3), "each_s": [s for _p, s in built],
           "runtime_compiled": [p.runtime_compiled for p, _s in built]}
    # The frontend's plans, built now (does the backend's build leave the driver cache warm for
    # them?), and both plans run on the same random operands.
    handle = cb.thread_handle(device)
    stream = cupy.cuda.get_current_stream()
    front_s, diffs, ms_front, ms_back = [], [], [], []
    for i, (spec, (plan, _s)) in enumerate(zip(specs, built)):
        t = time.perf_counter()
        front = convk.CudnnConv(spec)
        front_s.append(round(time.perf_counter() - t, 3))
        x, w, b = _operands(cupy, spec, i)
        zeros = cupy.zeros(convk._storage(spec.out_shape, True), cupy.float32)
        y_front = cupy.empty_like(zeros)
        y_back = cupy.full_like(zeros, cupy.nan)
        ws = cupy.empty(max(plan.workspace_size, 1), cupy.uint8)
        ptrs = {convk.UID["X"]: x.data.ptr, convk.UID["W"]: w.data.ptr, convk.UID["B"]: b.data.ptr,
                convk.UID["R"]: zeros.data.ptr, convk.UID["Y"]: y_back.data.ptr}

        def run_front():
            front(x.view(cupy.uint16), w, b, zeros, out=y_front)   # noqa: B023

        def run_back():
            plan.execute(handle, stream.ptr, ptrs, ws.data.ptr)     # noqa: B023
        run_front()
        run_back()
        diffs.append(float(cupy.abs(y_front - y_back).max()))
        ms_front.append(round(_event_ms(cupy, run_front), 4))
        ms_back.append(round(_event_ms(cupy, run_back), 4))
        if json_dir:
            with open(os.path.join(json_dir, f"plan{i}.json"), "wb") as f:
                f.write(plan.json())
    out.update({"frontend_after_s": front_s, "max_abs_diff": diffs, "ms_frontend": ms_front, "ms_backend": ms_back})
    return out


def case_reload(specs, json_dir):
    import cupy

    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels import cudnn_backend as cb
    convk.cudnn_module()
    handle = cb.thread_handle(cupy.cuda.Device().id)
    each = []
    t0 = time.perf_counter()
    plans = []
    for i, spec in enumerate(specs):
        with open(os.path.join(json_dir, f"plan{i}.json"), "rb") as f:
            text = f.read()
        t = time.perf_counter()
        plans.append(cb.BackendPlan(spec, handle, json_text=text))
        each.append(round(time.perf_counter() - t, 3))
    return {"wall_s": round(time.perf_counter() - t0, 3), "each_s": each,
            "json_bytes": [os.path.getsize(os.path.join(json_dir, f"plan{i}.json")) for i in range(len(specs))]}


def child(case: str, json_dir: str) -> None:
    import cupy
    t = time.perf_counter()
    cupy.cuda.runtime.free(0)
    from compiler.targets.gpu.kernels import conv as convk
    convk.cudnn_module()
    convk._handle()
    start = round(time.perf_counter() - t, 3)
    specs = split_specs()
    if case == "frontend":
        out = case_frontend(specs)
    elif case.startswith("backend:"):
        out = case_backend(specs, int(case.split(":")[1]), json_dir)
    else:
        out = case_reload(specs, json_dir)
    out.update({"case": case, "startup_s": start})
    print("RESULT " + json.dumps(out), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,8")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--child", default=None)
    ap.add_argument("--json-dir", default="")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.json_dir)
        return 0
    json_dir = tempfile.mkdtemp()
    cases = ["frontend"] + [f"backend:{n}" for n in args.threads.split(",")] + ["reload"]
    rows = []
    for case in cases:
        env = dict(os.environ, CUDA_CACHE_PATH=tempfile.mkdtemp(), PERFBOT_GPU_PLAN_CACHE="0",
                   PERFBOT_GPU_CACHE=tempfile.mkdtemp())
        proc = subprocess.run([sys.executable, __file__, "--child", case, "--json-dir", json_dir], env=env,
                              capture_output=True, text=True, timeout=240)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        row = json.loads(line[0][7:]) if line else {"case": case, "error": proc.stderr[-1500:]}
        rows.append(row)
        with open(os.path.join(args.out, "cudnn_parallel_build.jsonl"), "a") as log:
            log.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    print(f"{'case':12s} {'start s':>8s} {'wall s':>8s}  per plan s")
    for r in rows:
        print(f"{r['case']:12s} {r.get('startup_s', '-')!s:>8s} {r.get('wall_s', '-')!s:>8s}  {r.get('each_s', r.get('error', ''))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
