"""The gpu target's layer kernels against what they replaced, on the layer shapes of MobileNet-V2
(fp32, batch 64), EfficientNet-B0 (fp16, batch 32) and ConvNeXt-T (fp16, batch 16): the depthwise
kernel (``kernels/depthwise.py``) against cuDNN's plan for the same convolution (bias + ReLU
epilogue, channels-last), and the global average pool (``kernels/global_average.py``) against
CuPy's mean. Milliseconds per call (CUDA events, median of repeats, both paths in one process) and
the largest difference of their outputs.

    source benchmarks/gpu_env.sh && python3 benchmarks/layer_kernels_timing.py
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

# EfficientNet-B0's squeeze pools, fp16 batch 32: (C, H)
POOLS = ((32, 112), (96, 56), (144, 56), (144, 28), (240, 28), (240, 14), (480, 14), (672, 14), (672, 7),
         (1152, 7))


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
    from compiler.targets.gpu.options import GpuOptions
    graph = convk.cudnn_conv(spec, GpuOptions.from_environment())
    w_nhwc = cupy.ascontiguousarray(w.transpose(0, 2, 3, 1))
    diff = float(cupy.abs(ours(x, w, b).astype(cupy.float32) - graph(x, w_nhwc, b).astype(cupy.float32)).max())
    kernel_ms = _median_ms(lambda: ours(x, w, b))
    cudnn_ms = _median_ms(lambda: graph(x, w_nhwc, b))
    return {"shape": f"{dtype} N{n} C{c} {h}x{h} k{k} s{stride}", "kernel_ms": kernel_ms, "other_ms": cudnn_ms,
            "max_diff": diff}


def compare_pool(c, h, n=32, dtype="float16") -> dict:
    import cupy

    from compiler.targets.gpu.global_average import global_average_runner
    from compiler.targets.gpu.ops_nn import to_nhwc
    x = to_nhwc(cupy, cupy.random.default_rng(1).standard_normal((n, c, h, h), dtype=cupy.float32).astype(dtype))
    ours = global_average_runner(cupy, dtype)

    def cupy_mean():
        return cupy.mean(x, axis=(2, 3), keepdims=True, dtype="float32").astype(dtype)
    diff = float(cupy.abs(ours(x).astype(cupy.float32) - cupy_mean().astype(cupy.float32)).max())
    return {"shape": f"pool {dtype} N{n} C{c} {h}x{h}", "kernel_ms": _median_ms(lambda: ours(x)),
            "other_ms": _median_ms(cupy_mean), "max_diff": diff}


def _table(title: str, rows: list) -> None:
    print(f"{title:34} {'kernel ms':>10} {'was ms':>10} {'x':>6} {'max diff':>9}")
    for r in rows:
        print(f"{r['shape']:34} {r['kernel_ms']:10.4f} {r['other_ms']:10.4f} {r['other_ms'] / r['kernel_ms']:6.2f} "
              f"{r['max_diff']:9.2e}")
    print(f"{'total':34} {sum(r['kernel_ms'] for r in rows):10.4f} {sum(r['other_ms'] for r in rows):10.4f}")


def main() -> int:
    pools = [compare_pool(c, h) for c, h in POOLS]
    convs = [compare(*s) for s in SHAPES]
    _table("global average (was: cupy.mean)", pools)
    for dtype in ("float32", "float16"):
        _table(f"depthwise {dtype} (was: cuDNN)", [r for r in convs if r["shape"].startswith(dtype)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
