"""Transposed convolutions become convolutions (one a phase, or one over the spread input) in the
passes of the targets that run them so: every attribute form against the reference operator."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.cases import init, model, vi

CASES = {   # name: (input, weights (C_in, M / group, *k), attributes, bias)
    "1d_stride4": ((2, 6, 9), (6, 4, 8), {"strides": [4], "pads": [2, 2]}, True),
    "1d_plain": ((2, 3, 7), (3, 5, 3), {}, False),
    "2d_stride2": ((2, 8, 5, 6), (8, 4, 2, 2), {"strides": [2, 2]}, True),
    "2d_pads_output_padding": ((1, 4, 5, 5), (4, 6, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                                            "output_padding": [1, 1]}, True),
    "2d_big_pads": ((1, 4, 6, 6), (4, 2, 3, 3), {"strides": [1, 2], "pads": [3, 2, 2, 4]}, False),
    "2d_dilated_grouped": ((2, 8, 4, 5), (8, 3, 3, 2), {"strides": [3, 2], "dilations": [2, 3], "group": 2}, True),
    "2d_same_upper": ((1, 3, 5, 7), (3, 4, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, False),
    "2d_output_shape": ((1, 3, 4, 4), (3, 2, 3, 3), {"strides": [3, 3], "output_shape": [12, 13]}, False),
    "3d_stride2": ((1, 4, 3, 4, 5), (4, 3, 2, 2, 2), {"strides": [2, 2, 2]}, True),
    "1d_stride_past_kernel": ((2, 3, 5), (3, 2, 2), {"strides": [3], "output_padding": [2]}, True),
}


def _rng(name):
    return np.random.default_rng(sorted(CASES).index(name))


def _model(name):
    rng = _rng(name)
    x, w, attrs, bias = CASES[name]
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [init("w", (rng.standard_normal(w) * 0.3).astype(np.float32))]
    if bias:
        inits.append(init("b", rng.standard_normal(w[1] * attrs.get("group", 1)).astype(np.float32)))
    return model([helper.make_node("ConvTranspose", ins, ["y"], **attrs)], [vi("x", x)], [vi("y", None)], inits)


# target -> compile options of each way it is checked
TARGETS = {"cpu": [{}]}


def _ops(onnx_model, target="cpu"):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, target)
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_form_becomes_convolutions(name, target):
    """One a phase (strides no larger than the kernel, no dilation), else one over the spread input."""
    _x, w, attrs, _bias = CASES[name]
    strides = attrs.get("strides", [1] * (len(w) - 2))
    by_phase = not any(d > 1 for d in attrs.get("dilations", [])) and all(s <= k for s, k in zip(strides, w[2:]))
    ops = _ops(_model(name), target)
    assert "ConvTranspose" not in ops
    assert ops.count("Conv") + ops.count("fused_conv") == (int(np.prod(strides)) if by_phase else 1)


@pytest.mark.parametrize("target, options", [(t, o) for t, ways in sorted(TARGETS.items()) for o in ways])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_convolutions_compute_the_transposed_one(name, target, options):
    onnx_model = _model(name)
    feeds = {"x": _rng(name).standard_normal(CASES[name][0]).astype(np.float32)}
    want = compiler.parse_onnx(onnx_model).compile("ref").run(feeds)[0]
    got = compiler.parse_onnx(onnx_model).compile(target, **options).run(feeds)[0]
    assert got.shape == want.shape
    tol = 2e-2 if options.get("fp16") else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_weights_from_a_run_time_input_stay_a_transposed_convolution():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    onnx_model = model([node], [vi("x", (1, 2, 3, 3)), vi("w", (2, 2, 2, 2))], [vi("y", None)])
    assert all("ConvTranspose" in _ops(onnx_model, target) for target in TARGETS)
