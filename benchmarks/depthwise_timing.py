"""The depthwise kernel (``compiler/targets/gpu/kernels/depthwise.py``) against cuDNN's plan for
the same convolution (bias + ReLU epilogue, channels-last), on MobileNet-V2 (fp32, batch 64),
EfficientNet-B0 (fp16, batch 32) and ConvNeXt-T (fp16, batch 16) layer shapes: milliseconds per
call (CUDA events, median of repeats, both paths in one process) and their largest difference.

    source benchmarks/gpu_env.sh && python3 benchmarks/depthwise_timing.py
"""
from __future__ import annotations

import statistics

# (dtype, N, C, H, kernel, stride)
SHAPES = ([("float32", 64, c, h, 3, s) for c, h, s in ((32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2),
                                                        (192, 28, 1), (192, 28, 2), (384, 14, 1), (576, 14, 1),
                                                        (576, 14, 2), (960, 7, 1))]
          + [("float16", 32, c, h, k, s) for c, h, k, s in ((32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1),
                                                           (144, 56, 5, 2), (240, 28, 5, 1), (240, 28, 3, 2),
                                                           (480, 14, 5, 1), (672, 14, 5, 2), (1152, 7, 5, 1))]
          + [("float16", 16, c, h, 7, 1) for c, h in ((96, 56), (192, 28), (384, 14), (768, 7))])


def _median_ms(fn, reps: int = 20, repeats: int = 7) -> float:
    import cupy
    fn()
    times = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / reps)
    return statistics.median(times)


def compare(dtype, n, c, h, k, stride) -> dict:
    import cupy

    from compiler.targets.gpu import depthwise_conv
    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.ops_nn import to_nhwc
    pad = k // 2
    spec = convk.ConvSpec((n, c, h, h), (c, 1, k, k), (pad, pad), (pad, pad), (stride, stride), (1, 1), c, dtype,
                          bias=True, relu=True, nhwc=True)
    rng = cupy.random.default_rng(0)
    x = to_nhwc(cupy, rng.standard_normal((n, c, h, h), dtype=cupy.float32).astype(dtype))
    w = (rng.standard_normal((c, 1, k, k), dtype=cupy.float32) * 0.3).astype(dtype)
    b = rng.standard_normal((c,), dtype=cupy.float32).astype(dtype)
    ours = depthwise_conv.depthwise_runner(cupy, spec, {}, to_nhwc)
    graph = convk.cudnn_conv(spec)
    w_nhwc = cupy.ascontiguousarray(w.transpose(0, 2, 3, 1))
    diff = float(cupy.abs(ours(x, w, b).astype(cupy.float32) - graph(x, w_nhwc, b).astype(cupy.float32)).max())
    kernel_ms = _median_ms(lambda: ours(x, w, b))
    cudnn_ms = _median_ms(lambda: graph(x, w_nhwc, b))
    return {"shape": f"{dtype} N{n} C{c} {h}x{h} k{k} s{stride}", "kernel_ms": kernel_ms, "cudnn_ms": cudnn_ms,
            "speedup": cudnn_ms / kernel_ms, "max_diff": diff}


def main() -> int:
    rows = [compare(*s) for s in SHAPES]
    print(f"{'shape':34} {'kernel ms':>10} {'cuDNN ms':>10} {'x':>6} {'max diff':>9}")
    for r in rows:
        print(f"{r['shape']:34} {r['kernel_ms']:10.4f} {r['cudnn_ms']:10.4f} {r['speedup']:6.2f} {r['max_diff']:9.2e}")
    for dtype in ("float32", "float16"):
        mine = [r for r in rows if r["shape"].startswith(dtype)]
        print(f"{dtype} total: kernel {sum(r['kernel_ms'] for r in mine):.3f} ms, "
              f"cuDNN {sum(r['cudnn_ms'] for r in mine):.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
