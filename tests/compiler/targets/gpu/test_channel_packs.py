"""Channels-last kernels that move several channels a thread, against the reference target's ops
on fresh random inputs (needs a CUDA GPU): pooling in 16-byte channel packs, a convolution over
three channels run with its channels padded, and a pointwise body over a channel slice of a
wider channels-last buffer (a DenseNet concatenation). Their choices without a GPU:
test_channel_pack_choices.py."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.ops.registry import get_op
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import init, model, vi
from tests.compiler.targets.gpu.test_pointwise_flat import GELU, _typed

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

POOL = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1], "ceil_mode": 0,
        "count_include_pad": 0, "auto_pad": "NOTSET", "indices": False, "storage_order": 0}


def _channels_last(cupy, x):
    return cupy.asarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("dtype, channels", [("float16", 64), ("float16", 12), ("float16", 6), ("float16", 3),
                                             ("float32", 20), ("float32", 6)])
def test_channels_last_pools_match_the_reference(op, dtype, channels):
    import cupy

    from compiler.targets.gpu.kernels.pool import pool2d
    rng = np.random.default_rng(21)
    x = rng.standard_normal((2, channels, 13, 11)).astype(dtype)
    want = get_op(op).compute(POOL, x)
    got = pool2d(_channels_last(cupy, x), want.shape, "max" if op == "MaxPool" else "avg", (3, 3), (2, 2),
                 (1, 1), (1, 1), (1, 1), 0)
    assert got.transpose(0, 2, 3, 1).flags.c_contiguous
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def _first_layer(channels: int):
    rng = np.random.default_rng(22)
    w = (rng.standard_normal((16, channels, 7, 7)) * 0.2).astype(np.float16)
    b = rng.standard_normal(16).astype(np.float16)
    return model([helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[7, 7], strides=[2, 2],
                                   pads=[3, 3, 3, 3]),
                  helper.make_node("Relu", ["c"], ["y"])],
                 [vi("x", [2, channels, 30, 28], TensorProto.FLOAT16)], [vi("y", None, TensorProto.FLOAT16)],
                 [init("w", w), init("b", b)])


@pytest.mark.parametrize("channels", [3, 1])
def test_a_convolution_over_few_channels_runs_padded_and_matches_the_reference(channels):
    from compiler.targets.gpu.conv_pad_channels import PADDED_CHANNELS
    from compiler.targets.gpu.kernels.conv import made_graphs
    onnx_model = _first_layer(channels)
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    # the graphs made for this input's shape (in this process, by either parameter) are padded ones
    inputs = {spec.x_shape[1] for spec, _options in made_graphs() if spec.x_shape[2:] == (30, 28)}
    assert inputs == {PADDED_CHANNELS}
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    convs = [fn for _i, fn, _a, _d in steps if getattr(fn, "path", "").startswith("cudnn")]
    assert [fn.path for fn in convs] == ["cudnn-nhwc"]
    rng = np.random.default_rng(24)
    for _ in range(3):      # eager, recorded into a CUDA graph, replayed
        feeds = {"x": rng.standard_normal((2, channels, 30, 28)).astype(np.float16)}
        got, want = program.run(feeds)[0], reference.run(feeds)[0]
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-2, atol=1e-2)


def test_pointwise_over_a_channel_slice_of_a_wider_buffer_matches_the_reference():
    import cupy

    from compiler.passes.fuse_pointwise import evaluate_body
    from compiler.targets.gpu.kernels.pointwise_flat import run_flat
    rng = np.random.default_rng(23)
    block = rng.standard_normal((3, 9, 7, 40)).astype(np.float16)           # (N, H, W, C) of a block
    scale = rng.standard_normal((1, 24, 1, 1)).astype(np.float16)
    sliced = cupy.asarray(block)[..., :24].transpose(0, 3, 1, 2)             # logical NCHW, 24 of 40
    body = _typed(GELU, "float16")
    got = run_flat(body, ["float16"] * 2, [sliced, cupy.asarray(scale)], (3, 24, 9, 7), "float16")
    assert got is not None and got.transpose(0, 2, 3, 1).flags.c_contiguous
    want = evaluate_body(body, [block[..., :24].transpose(0, 3, 1, 2), scale])
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32), want.astype(np.float32), rtol=5e-3, atol=5e-3)
