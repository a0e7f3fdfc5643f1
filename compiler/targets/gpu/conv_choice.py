"""fp32 convolutions: the exact GEMM path or cuDNN, whichever runs the convolution faster.

Both keep fp32 arithmetic. On the H200 the cuDNN engines left once TF32 is excluded ran ResNet-50
at 400 img/s (batch 64) and 179 (batch 1), the GEMM path (cuBLAS fp32, ~51 TFLOP/s) at 2,495 and
923. But a GEMM with few output channels or a short reduction runs its tiles mostly empty (DenseNet
-121 at batch 32 lost a quarter of its rate on the GEMM path, its growth convolutions have 32
output channels). So a convolution whose GEMM is large in both dimensions takes the GEMM path at
once; any other is timed both ways once, on random data, and the choice is kept on disk with the
cuDNN plans. PERFBOT_GPU_FP32_CONV=gemm|cudnn forces one path.
"""
from __future__ import annotations

import os

from .kernels import conv as convk

# Output channels and reduction length (C * kh * kw) from which the GEMM is taken untimed.
SIZED = 64


def gemm_sized(spec) -> bool:
    k, cg, kh, kw = spec.w_shape
    return k >= SIZED and cg * kh * kw >= SIZED


def fp32_conv(spec, make_gemm, make_cudnn):
    """The runner for fp32 convolution ``spec``: ``make_gemm()``'s or ``make_cudnn()``'s (None
    when cuDNN cannot take it)."""
    forced = os.environ.get("PERFBOT_GPU_FP32_CONV", "auto")
    if forced == "gemm" or (forced != "cudnn" and gemm_sized(spec)):
        return make_gemm()
    key = f"fp32conv|{spec}"
    chosen = convk.plan_cache().get(key) if forced != "cudnn" else "cudnn"
    if chosen == "gemm":
        return make_gemm()
    cudnn_run = make_cudnn()
    if cudnn_run is None:
        return make_gemm()
    if chosen == "cudnn":
        return cudnn_run
    gemm_run = make_gemm()
    best = "gemm" if _seconds(spec, gemm_run) <= _seconds(spec, cudnn_run) else "cudnn"
    convk.remember_plan(key, best)
    return gemm_run if best == "gemm" else cudnn_run


def _seconds(spec, run, reps: int = 5) -> float:
    """Mean milliseconds of ``reps`` runs after one warm-up, on random channels-last operands."""
    import cupy
    rng = cupy.random.default_rng(0)

    def channels_last(lens):
        n, c, *sp = lens
        return rng.standard_normal((n, *sp, c), dtype=cupy.float32).transpose(0, 3, 1, 2)
    args = [channels_last(spec.x_shape), rng.standard_normal(spec.w_shape, dtype=cupy.float32)]
    if spec.bias:
        args.append(rng.standard_normal((spec.w_shape[0],), dtype=cupy.float32))
    if spec.residual:
        args.append(channels_last(spec.out_shape))
    run(*args)
    stream = cupy.cuda.get_current_stream()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(reps):
        run(*args)
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / reps
