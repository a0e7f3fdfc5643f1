"""Can a cuDNN convolution write its output as split-bf16 channels directly?

Today an fp32 convolution on the split path writes fp32 Y, then a separate kernel reads Y and
writes the next convolution's [hi | hi | lo] bf16 channels (4 bytes read + 6 written per value,
one launch per convolution). This checks, on one convolution graph, whether cuDNN builds and
runs the same graph with the split as its epilogue: three bf16 outputs at channel offsets 0, K
and 2K of one (N, H, W, 3K) buffer, for two ways of rounding hi:

- ``virtual``: hi is a virtual bf16 tensor (does the fused kernel round there?), lo = y - hi;
- ``veltkamp``: hi = s - (s - y) with s = y * 65537 (fp32 arithmetic that leaves 8 significant
  bits, so hi is exact in bf16), lo = y - hi;
- ``bf16-compute-*``: hi an identity computed in bf16 (kept as a bf16 or fp32 virtual tensor).

Each variant's outputs are checked against fp32 Y of the plain graph split in NumPy, and the
variants are timed against plain graph + split kernel. Prints one line per variant.

    source benchmarks/gpu_env.sh; python3 benchmarks/cudnn_split_output_check.py
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SHAPES = [  # (N, C, H, W, K, kernel, stride, residual)
    (32, 64, 56, 56, 64, 3, 1, False),
    (32, 256, 56, 56, 64, 1, 1, False),
    (32, 64, 56, 56, 256, 1, 1, True),
]


def _graph(cudnn, handle, n, c3, h, w, k, ks, stride, residual, variant):
    from compiler.targets.gpu.kernels.conv import _strides
    f32, bf = cudnn.data_type.FLOAT, cudnn.data_type.BFLOAT16
    g = cudnn.pygraph(io_data_type=f32, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    x = g.tensor(name="X", dim=[n, c3, h, w], stride=_strides([n, c3, h, w], True), data_type=bf, uid=1)
    wt = g.tensor(name="W", dim=[k, c3, ks, ks], stride=_strides([k, c3, ks, ks], True), data_type=bf, uid=2)
    pad = ks // 2
    y = g.conv_fprop(image=x, weight=wt, pre_padding=[pad, pad], post_padding=[pad, pad], stride=[stride] * 2,
                     dilation=[1, 1], compute_data_type=f32)
    b = g.tensor(name="B", dim=[1, k, 1, 1], stride=[k, 1, k, k], data_type=f32, uid=4)
    y = g.bias(input=y, bias=b)
    oh, ow = (h + 2 * pad - ks) // stride + 1, (w + 2 * pad - ks) // stride + 1
    out = [n, k, oh, ow]
    if residual:
        r = g.tensor(name="R", dim=out, stride=_strides(out, True), data_type=f32, uid=5)
        y = g.add(a=y, b=r)
    y = g.relu(input=y)
    split_stride = [oh * ow * 3 * k, 1, ow * 3 * k, 3 * k]
    if variant == "plain":
        y.set_output(True).set_data_type(f32).set_uid(3).set_dim(out).set_stride(_strides(out, True))
    else:
        if variant == "virtual":
            hi = g.identity(input=y, compute_data_type=f32)
            hi.set_data_type(bf)
        elif variant.startswith("bf16-compute"):
            hi = g.identity(input=y, compute_data_type=bf)
            hi.set_data_type(bf if variant.endswith("bf16") else f32)
        else:
            c = g.tensor(name="C", dim=[1, k, 1, 1], stride=[k, 1, k, k], data_type=f32, uid=6)
            s = g.mul(a=y, b=c)
            hi = g.sub(a=s, b=g.sub(a=s, b=y))
        lo = g.sub(a=y, b=hi)
        for t, uid in ((g.identity(input=hi, compute_data_type=f32), 10), (g.identity(input=hi, compute_data_type=f32), 11),
                       (lo, 12)):
            t.set_output(True).set_data_type(bf).set_uid(uid).set_dim(out).set_stride(split_stride)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, out


def check(shape) -> list[str]:
    import cupy

    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels import split_bf16
    cudnn = convk.cudnn_module()
    handle = convk._handle()
    n, c, h, w, k, ks, stride, residual = shape
    c3 = split_bf16.width(c)
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal((n, h, w, c), dtype=np.float32))
    wt = cupy.asarray(rng.standard_normal((k, ks, ks, c), dtype=np.float32) / np.sqrt(c * ks * ks))
    x3 = split_bf16.along_last(x, split_bf16.LO_LEFT)
    w3 = split_bf16.along_last(wt, split_bf16.LO_RIGHT)
    bias = cupy.asarray(rng.standard_normal(k, dtype=np.float32))
    lines = []
    plain, out = _graph(cudnn, handle, n, c3, h, w, k, ks, stride, residual, "plain")
    oh, ow = out[2], out[3]
    r = cupy.asarray(rng.standard_normal((n, oh, ow, k), dtype=np.float32))
    ws = cupy.empty(max(int(plain.get_workspace_size()), 1), dtype=cupy.uint8)
    y = cupy.empty((n, oh, ow, k), dtype=cupy.float32)
    pack = {1: x3.data.ptr, 2: w3.data.ptr, 3: y.data.ptr, 4: bias.data.ptr}
    if residual:
        pack[5] = r.data.ptr

    def run_plain():
        plain.execute(pack, ws.data.ptr, handle=handle)
        return split_bf16.along_last(y, split_bf16.LO_LEFT)
    ref3 = run_plain()
    yref = cupy.asnumpy(y)
    t_plain = _time(run_plain)
    t_conv = _time(lambda: plain.execute(pack, ws.data.ptr, handle=handle))
    lines.append(f"{shape} plain conv {t_conv * 1e3:.3f} ms, + split kernel {t_plain * 1e3:.3f} ms, "
                 f"runtime-compiled {convk.runtime_compiled(plain)}")
    ref_hi = cupy.asnumpy(ref3[..., :k]).astype(np.uint32) << 16
    for variant in ("virtual", "veltkamp", "bf16-compute-bf16", "bf16-compute-fp32"):
        try:
            t0 = time.perf_counter()
            g, _ = _graph(cudnn, handle, n, c3, h, w, k, ks, stride, residual, variant)
            build = time.perf_counter() - t0
            out3 = cupy.zeros((n, oh, ow, 3 * k), dtype=cupy.uint16)
            wsv = cupy.empty(max(int(g.get_workspace_size()), 1), dtype=cupy.uint8)
            base, step = out3.data.ptr, k * 2
            vpack = {1: x3.data.ptr, 2: w3.data.ptr, 4: bias.data.ptr, 10: base, 11: base + step, 12: base + 2 * step}
            if residual:
                vpack[5] = r.data.ptr
            if variant == "veltkamp":
                scale = cupy.full(k, 65537.0, dtype=cupy.float32)
                vpack[6] = scale.data.ptr
            g.execute(vpack, wsv.data.ptr, handle=handle)
            cupy.cuda.Device().synchronize()
            got = cupy.asnumpy(out3)
            hi = (got[..., :k].astype(np.uint32) << 16).view(np.float32)
            hi2 = (got[..., k:2 * k].astype(np.uint32) << 16).view(np.float32)
            lo = (got[..., 2 * k:].astype(np.uint32) << 16).view(np.float32)
            scale_y = float(np.abs(yref).max())
            err = float(np.abs(hi.astype(np.float64) + lo - yref).max()) / scale_y
            err_hi = float(np.abs(hi.astype(np.float64) - yref).max()) / scale_y
            same_hi = float(np.mean(got[..., :k].astype(np.uint32) << 16 == ref_hi))
            t = _time(lambda: g.execute(vpack, wsv.data.ptr, handle=handle))
            lines.append(f"{shape} {variant}: build {build:.2f} s, runtime-compiled {convk.runtime_compiled(g)}, "
                         f"hi+lo err {err:.2e} (hi alone {err_hi:.2e}) of max|y|, hi copies equal "
                         f"{bool(np.array_equal(hi, hi2))}, hi == split-kernel hi {same_hi:.4f}, "
                         f"lo nonzero {float(np.mean(lo != 0)):.3f}, {t * 1e3:.3f} ms")
        except Exception as exc:  # noqa: BLE001 - the point is which variants cuDNN takes
            lines.append(f"{shape} {variant}: {type(exc).__name__}: {str(exc)[:300]}")
    return lines


def _time(fn, reps=20):
    import cupy
    fn()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / reps)
    return float(np.median(samples))


def main() -> int:
    for shape in SHAPES:
        for line in check(shape):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
