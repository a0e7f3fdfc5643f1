"""Where a cold process's first cuDNN plan builds spend their time (run on the GPU machine, in a
fresh process with empty CUDA_CACHE_PATH / PERFBOT_GPU_CACHE): CUDA and cuDNN start-up, the first
precompiled-engine plan, the first and later runtime-compiled (bf16 split) plans, a first CuPy
kernel compile, and whether a plan build lets other Python threads run (the GIL).

    python3 benchmarks/cudnn_build_anatomy.py
"""
from __future__ import annotations

import os
import threading
import time

os.environ["PERFBOT_GPU_PLAN_CACHE"] = "0"     # build every plan; nothing read from or kept on disk
os.environ["PERFBOT_GPU_CUDNN_BACKEND"] = "0"  # the frontend's build (its graphs are serialized below)
T0 = time.perf_counter()
marks = []


def mark(what: str) -> None:
    marks.append((what, time.perf_counter()))


def gil_probe(what: str, work) -> None:
    """Count a busy Python loop on another thread while ``work`` runs and for as long again after:
    equal counts mean ``work`` let the thread run (released the GIL)."""
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
    thread = threading.Thread(target=spin)
    thread.start()
    time.sleep(0.05)
    before = count[0]
    start = time.perf_counter()
    work()
    seconds = time.perf_counter() - start
    during = count[0] - before
    time.sleep(seconds)
    after = count[0] - before - during
    stop.set()
    thread.join()
    mark(f"GIL probe {what}")
    print(f"busy-loop iterations: {during} during a {seconds:.3f} s {what}, {after} in the same time after")


def main() -> None:
    import cupy
    mark("import cupy")
    cupy.cuda.Device(0).use()
    cupy.cuda.runtime.free(0)
    mark("CUDA context")
    from compiler.targets.gpu.kernels import conv as convk
    convk.cudnn_module()
    mark("import cudnn")
    convk._handle()
    mark("cuDNN handle")

    def spec(c, k, hw, ksz, dtype="float16", inputs="", **ep):
        pad = ksz // 2
        return convk.ConvSpec((64, c, hw, hw), (k, c, ksz, ksz), (pad, pad), (pad, pad), (1, 1), (1, 1), 1,
                              dtype, nhwc=True, inputs=inputs, **ep)
    convk.CudnnConv(spec(64, 64, 56, 3))
    mark("1st precompiled plan (fp16 3x3)")
    convk.CudnnConv(spec(128, 128, 28, 3))
    mark("2nd precompiled plan (fp16 3x3)")
    convk.CudnnConv(spec(192, 64, 56, 1, "float32", "bfloat16", bias=True, relu=True))
    mark("1st runtime-compiled plan (bf16 split 1x1 +bias+relu)")
    convk.CudnnConv(spec(384, 128, 28, 3, "float32", "bfloat16", bias=True, relu=True))
    mark("2nd runtime-compiled plan (bf16 split 3x3)")
    convk.CudnnConv(spec(768, 256, 14, 3, "float32", "bfloat16", bias=True, relu=True))
    mark("3rd runtime-compiled plan (bf16 split 3x3)")
    g = convk.CudnnConv(spec(1536, 512, 7, 1, "float32", "bfloat16", bias=True, residual=True, relu=True))
    mark("4th runtime-compiled plan (bf16 split 1x1 +residual)")
    print("runtime compiled:", convk.runtime_compiled(g.graph))
    blob = bytes(g.graph.serialize(as_bytes=True))
    mark(f"serialize ({len(blob)} bytes)")
    k = cupy.RawKernel('extern "C" __global__ void f(float* x) { x[threadIdx.x] += 1.0f; }', "f")
    k((1,), (32,), (cupy.zeros(32, cupy.float32),))
    cupy.cuda.Device().synchronize()
    mark("1st CuPy kernel compile")

    # Does a plan build, or a CuPy (NVRTC) compile, let another Python thread run?
    from compiler.targets.gpu.kernels import split_bf16
    gil_probe("build", lambda: convk.CudnnConv(spec(384, 96, 28, 3, "float32", "bfloat16", bias=True)))
    gil_probe("NVRTC compile", split_bf16._module)      # compiles the whole module

    prev = T0
    for what, at in marks:
        print(f"{at - T0:7.3f} s  (+{at - prev:6.3f})  {what}")
        prev = at


if __name__ == "__main__":
    main()
