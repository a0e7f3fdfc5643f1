"""The one-kernel softmax, group norm (+ SiLU) and RMSNorm of the gpu target against the paths they
replaced, on ViT-B/16's attention softmax (fp16, batch 32), a classifier's softmax, UNet's group
norms (fp16, batch 2), a Llama-size RMSNorm and ViT's residual Add + LayerNorm: each graph compiled twice in one process, once as
now and once with the new kernels and recognisers switched off, then replayed through CUDA graphs.
Milliseconds per run (CUDA events, median of repeats) and the largest difference of the outputs.

    source benchmarks/gpu_env.sh && python3 benchmarks/norm_kernels_timing.py
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from layer_kernels_timing import _median_ms  # noqa: E402

from tests.compiler.targets.gpu.cases import model, vi  # noqa: E402
from tests.compiler.targets.gpu.norm_cases import group_norm_chain, residual_norm, rms_chain  # noqa: E402


def _softmax(shape, dtype):
    t = TensorProto.FLOAT16 if dtype == "float16" else TensorProto.FLOAT
    return model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", shape, t)], [vi("y", None, t)])


CASES = [("softmax vit-b/16 b32", _softmax((32, 12, 197, 197), "float16"), (32, 12, 197, 197), "float16"),
         ("softmax 256x1000 fp32", _softmax((256, 1000), "float32"), (256, 1000), "float32")] + [
    (f"groupnorm+silu {c}x{h}x{h}", group_norm_chain((2, c, h, h), dtype="float16"), (2, c, h, h), "float16")
    for c, h in ((320, 64), (640, 32), (1280, 16))] + [
    ("rmsnorm 8x512x4096", rms_chain((8, 512, 4096), dtype="float16"), (8, 512, 4096), "float16"),
    ("add+layernorm vit-b/16 b32", residual_norm((32, 197, 768), dtype="float16"), (32, 197, 768), "float16")]


@contextmanager
def before_this_change():
    """The new kernels' dispatch and the recognising passes switched off."""
    from compiler.passes import fuse_residual_norm, recognize_group_norm, recognize_rms_norm
    from compiler.targets.gpu import norm_groups, residual_norm as residual, rms_norm, softmax_rows
    saved = [(m, name, getattr(m, name)) for m, name in
             ((softmax_rows, "applies"), (norm_groups, "applies"), (rms_norm, "applies"), (residual, "applies"),
              (recognize_group_norm.RecognizeGroupNorm, "apply"), (recognize_rms_norm.RecognizeRmsNorm, "apply"),
              (fuse_residual_norm.FuseResidualNorm, "apply"))]
    for m, name, _ in saved:
        setattr(m, name, (lambda *a: False) if name == "applies" else (lambda self, mpm: None))
    try:
        yield
    finally:
        for m, name, value in saved:
            setattr(m, name, value)


def _timed(onnx_model, x):
    import compiler
    import cupy
    program = compiler.parse_onnx(onnx_model).compile("gpu", offload_copy=False)
    args = [cupy.asarray(x) if p.name == "x" else cupy.empty(p.shape.lens, dtype=p.shape.dtype)
            for p in program.main.parameters()]
    outs = program.compiled.run_raw(args)
    out = cupy.asnumpy(outs[0] if isinstance(outs, (list, tuple)) else outs)
    return _median_ms(lambda: program.compiled.run_raw(args)), out


def main() -> int:
    print(f"{'case':28} {'before ms':>10} {'after ms':>10} {'ratio':>7} {'max diff':>10}")
    for name, onnx_model, shape, dtype in CASES:
        x = (np.random.default_rng(1).standard_normal(shape) * 2 + 0.5).astype(dtype)
        after, y_after = _timed(onnx_model, x)
        with before_this_change():
            before, y_before = _timed(onnx_model, x)
        diff = float(np.max(np.abs(y_after.astype(np.float32) - y_before.astype(np.float32))))
        print(f"{name:28} {before:10.4f} {after:10.4f} {before / after:7.2f} {diff:10.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
