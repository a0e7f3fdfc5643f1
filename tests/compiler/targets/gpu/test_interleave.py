"""The interleave kernel against the reference on fresh random inputs (needs a CUDA GPU): channel
slices of channels-last buffers (rows wider than their width), 2 to 4 sources, fp32 and fp16;
and a ShuffleNet-style unit compiled whole. Which chains become an interleave:
test_recognize_interleave.py."""
import numpy as np
import pytest

import compiler
from compiler.ops.registry import get_op
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.test_recognize_interleave import shuffle_unit

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _channels_last_slice(cp, rng, n, c, h, w, lo, hi, dtype):
    """Channels lo..hi of a channels-last (N, C, H, W) buffer: pixel stride C, width hi - lo."""
    whole = rng.standard_normal((n, h, w, c)).astype(dtype)
    return cp.asarray(whole).transpose(0, 3, 1, 2)[:, lo:hi]


@pytest.mark.parametrize("parts", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_kernel_matches_reference_on_channel_slices(parts, dtype):
    import cupy as cp

    rng = np.random.default_rng(parts)
    k = 58
    xs = [_channels_last_slice(cp, rng, 3, k * 2 + j, 7, 9, j, j + k, dtype) for j in range(parts)]
    want = get_op("interleave").compute({"axis": 1}, *(cp.asnumpy(x) for x in xs))
    got = _run_lowered(dtype, xs)
    assert got.strides[1] == got.itemsize                    # channels-last result
    np.testing.assert_array_equal(cp.asnumpy(got), want)


def _run_lowered(dtype, xs):
    """The gpu target's lowering of one interleave instruction, run on ``xs``."""
    from types import SimpleNamespace

    from compiler.ir import Program, Shape
    from compiler.targets.gpu import backend
    from compiler.targets.gpu.ops_movement import _interleave

    program = Program()
    params = [program.main.add_parameter(f"x{j}", Shape(dtype, tuple(x.shape))) for j, x in enumerate(xs)]
    ins = program.main.add_instruction("interleave", params, {"axis": 1})
    device = backend.load()
    return _interleave(ins, SimpleNamespace(xp=device.xp, backend=device))(*xs)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-4), ("float16", 2e-2)])
def test_shuffle_unit_compiled_whole_matches_reference(dtype, tol):
    model = shuffle_unit(shape=(4, 116, 14, 14), dtype=dtype)
    program = compiler.parse_onnx(model).compile("gpu")
    steps = program.compiled.context.roots["main"].body.steps
    assert any(getattr(fn, "path", "") == "interleave" for _i, fn, _a, _d in steps)
    for seed in (0, 1):                                   # the graph replayed on fresh inputs
        feeds = {"x": np.random.default_rng(seed).standard_normal((4, 116, 14, 14)).astype(dtype)}
        want = compiler.parse_onnx(model).compile("ref").run(feeds)
        for g, r in zip(program.run(feeds), want):
            np.testing.assert_allclose(g.astype(np.float32), r.astype(np.float32), rtol=tol, atol=tol)
