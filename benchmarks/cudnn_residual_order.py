"""Whether the order of a convolution's epilogue decides if cuDNN needs a runtime-compiled engine
(run on the GPU machine, fresh CUDA_CACHE_PATH): conv -> bias -> add(residual) -> ReLU, as the
compiler builds it, against conv -> add(residual) -> bias -> ReLU, the order of cuDNN's classic
fused conv-bias-activation (y = act(conv(x) + z + bias)). Prints, per data type and order, whether
the plan's engine is runtime-compiled, the build seconds and the largest difference between the
two orders' outputs on random data.
"""
from __future__ import annotations

import time

import cupy

from compiler.targets.gpu.kernels import conv as convk


def build(spec, residual_first: bool):
    cudnn = convk.cudnn_module()
    steps = ("add", "bias", "relu") if residual_first else ("bias", "add", "relu")
    g, _tensors = convk.frontend_graph(spec, convk._handle(), steps)
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    start = time.perf_counter()
    g.build_plans()
    return g, time.perf_counter() - start


def run(g, spec):
    rng = cupy.random.default_rng(0)
    n, c, h, w_ = spec.x_shape
    k, _, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    if spec.inputs == "bfloat16":
        def operand(shape):
            return (rng.standard_normal(shape, dtype=cupy.float32).view(cupy.uint32) >> 16).astype(cupy.uint16)
    else:
        def operand(shape):
            return rng.standard_normal(shape, dtype=cupy.float32).astype(spec.dtype)
    bufs = {1: operand((n, h, w_, c)), 2: operand((k, kh, kw, c)),
            3: cupy.empty((n, oh, ow, k), spec.dtype), 4: rng.standard_normal(k, dtype=cupy.float32).astype(spec.dtype),
            5: rng.standard_normal((n, oh, ow, k), dtype=cupy.float32).astype(spec.dtype)}
    ws = cupy.empty(max(int(g.get_workspace_size()), 1), cupy.uint8)
    g.execute({u: a.data.ptr for u, a in bufs.items()}, ws.data.ptr, handle=convk._handle())
    cupy.cuda.Device().synchronize()
    return bufs[3].astype(cupy.float32)


def main():
    cases = [convk.ConvSpec((64, 256, 14, 14), (1024, 256, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float16",
                            bias=True, residual=True, relu=True, nhwc=True),
             convk.ConvSpec((64, 512, 7, 7), (2048, 512, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float16",
                            bias=True, residual=True, relu=True, nhwc=True),
             convk.ConvSpec((64, 768, 14, 14), (1024, 768, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float32",
                            bias=True, residual=True, relu=True, nhwc=True, inputs="bfloat16")]
    for spec in cases:
        outs = {}
        for first in (True, False):
            try:
                g, secs = build(spec, first)
                outs[first] = run(g, spec)
                print(f"{spec.dtype}/{spec.inputs or '-'} x{spec.x_shape} w{spec.w_shape} "
                      f"{'conv+res+bias' if first else 'conv+bias+res'}: runtime compiled "
                      f"{convk.runtime_compiled(g)}, build {secs:.3f} s")
            except Exception as exc:  # noqa: BLE001 - an order cuDNN refuses is a result too
                print(f"{spec.dtype} {'res first' if first else 'bias first'}: refused: {str(exc)[:200]}")
        if len(outs) == 2:
            print("   max |difference| between orders:", float(cupy.abs(outs[True] - outs[False]).max()))


if __name__ == "__main__":
    main()
