"""1-D convolutions run as 2-D ones over a height of 1 (``conv_planar``): the planned spec, whole
programs on the emulated target against the reference, and on a GPU the paths they take."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.conv_planar import planar
from compiler.targets.gpu.kernels.conv_spec import ConvSpec
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import build, feeds_for

EMULATED = GpuOptions(emulate=True)
ONE_D = ["conv1d", "conv1d_strided_dilated", "conv1d_depthwise", "conv1d_grouped", "conv1d_waveform",
         "audio_front"]


def test_the_planar_spec_has_the_same_output_over_a_height_of_one():
    spec = ConvSpec((2, 8, 41), (12, 8, 5), (4,), (3,), (2,), (2,), 1, "float32", bias=True)
    flat = planar(spec)
    assert flat.x_shape == (2, 8, 1, 41) and flat.w_shape == (12, 8, 1, 5)
    assert flat.pads_begin == (0, 4) and flat.pads_end == (0, 3)
    assert flat.strides == (1, 2) and flat.dilations == (1, 2) and flat.bias
    assert flat.out_shape == spec.out_shape[:2] + (1,) + spec.out_shape[2:]
    two_d = ConvSpec((2, 8, 9, 9), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32")
    assert planar(two_d) is two_d


def _conv_paths(program):
    steps = program.compiled.context.roots["main"].body.steps
    return [getattr(fn, "path", "") for ins, fn, _i, _d in steps if ins.op in ("Conv", "fused_conv")]


@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", ONE_D)
def test_emulated_one_d_convolutions_match_the_reference(name, fp16):
    reference = compiler.parse_onnx(build(name)).compile("ref")
    feeds = feeds_for(reference, 4)
    want = reference.run(feeds)
    program = compiler.parse_onnx(build(name)).compile("gpu", fp16=fp16, gpu_options=EMULATED)
    paths = _conv_paths(program)
    assert paths and all(p.endswith("-1d") for p in paths)
    got = program.run(feeds)
    tol = 3e-2 if fp16 else 1e-5
    for g, r in zip(got, want):
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name, fp16, path", [
    ("conv1d", True, "cudnn-nhwc-1d"), ("audio_front", True, "cudnn-nhwc-1d"),
    ("conv1d_waveform", True, "cudnn-nhwc-1d"),     # one input channel, padded to four
    ("conv1d_depthwise", True, "depthwise-nhwc-1d"), ("conv1d_depthwise", False, "depthwise-nhwc-1d")])
def test_one_d_convolutions_take_the_two_d_paths_on_a_gpu(name, fp16, path):
    program = compiler.parse_onnx(build(name)).compile("gpu", fp16=fp16)
    assert set(_conv_paths(program)) == {path}
    reference = compiler.parse_onnx(build(name)).compile("ref")
    for seed in (1, 2, 3):      # eager, recorded, replayed
        feeds = feeds_for(reference, seed)
        for g, r in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(g, r, rtol=3e-2, atol=3e-2)
    assert program.compiled.context.roots["main"].graph_error is None
