"""The gpu target folds the activation between a convolution and the depthwise convolution that
reads it into the depthwise kernel's prologue; not where the activation has other readers, not
into other convolutions, not where no GPU kernel runs (checked without a GPU: passes only)."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program
from compiler.ops.registry import get_op
from compiler.passes.fuse_conv_epilogue import FUSED_CONV

from tests.compiler.targets.gpu.cases import init, model, vi

C = 6
CLIP = [helper.make_node("Clip", ["e", "lo", "hi"], ["a"])]
SILU = [helper.make_node("Sigmoid", ["e"], ["s"]), helper.make_node("Mul", ["e", "s"], ["a"])]
HARDSWISH = [helper.make_node("HardSwish", ["e"], ["a"])]


def _expand_act_conv(activation: list, group: int, extra_reader: bool = False):
    """1x1 expand convolution -> activation -> 3x3 convolution of ``group`` groups."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "we"], ["e"])] + activation
    nodes.append(helper.make_node("Conv", ["a", "wd"], ["y"], group=group, pads=[1, 1, 1, 1]))
    outputs = [vi("y", None)]
    if extra_reader:
        nodes.append(helper.make_node("Neg", ["a"], ["z"]))
        outputs.append(vi("z", None))
    inits = [init("we", rng.standard_normal((C, 3, 1, 1)).astype(np.float32)),
             init("wd", rng.standard_normal((C, C // group, 3, 3)).astype(np.float32)),
             init("lo", np.float32(0)), init("hi", np.float32(6))]
    return model(nodes, [vi("x", (1, 3, 9, 7))], outputs, inits)


def _prepared(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i for i in program.main.instructions if i.op in ("Conv", FUSED_CONV, "fused_pointwise")]


@pytest.mark.parametrize("activation, step", [(CLIP, {"clip": [0.0, 6.0]}), (HARDSWISH, {"hardswish": True})])
def test_depthwise_convolution_takes_the_activation_before_it(activation, step):
    expand, depthwise = _prepared(_expand_act_conv(activation, C))
    assert expand.op == "Conv" and depthwise.op == FUSED_CONV
    assert depthwise.attrs["prologue"] == step and depthwise.inputs[0] is expand


def test_silu_stays_apart():
    # an exponential per element read made the kernel slower than the separate SiLU pass
    assert [i.op for i in _prepared(_expand_act_conv(SILU, C))] == ["Conv", "fused_pointwise", "Conv"]


def test_an_activation_read_elsewhere_stays():
    found = _prepared(_expand_act_conv(CLIP, C, extra_reader=True))
    assert [i.op for i in found if i.op != "fused_pointwise"] == ["Conv", "Conv"]
    assert found[-1].inputs[0].op == "fused_pointwise"


def test_other_convolutions_keep_the_activation_apart():
    assert [i.op for i in _prepared(_expand_act_conv(CLIP, 1))] == ["Conv", "fused_pointwise", "Conv"]


def test_no_fold_where_the_kernel_does_not_run(monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    assert [i.op for i in _prepared(_expand_act_conv(HARDSWISH, C))] == ["Conv", "fused_pointwise", "Conv"]


def test_reference_applies_the_prologue_first():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, C, 5, 5)).astype(np.float32), rng.standard_normal((C, 1, 3, 3)).astype(np.float32)
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1], "dilations": [1, 1], "group": C}
    attrs = {**conv, "bias": False, "residual": False, "relu": False, "prologue": {"clip": [0.5, 6.0]}}
    want = get_op("Conv").compute(conv, np.clip(x, 0.5, 6.0), w)
    np.testing.assert_allclose(get_op(FUSED_CONV).compute(attrs, x, w), want, rtol=1e-6)
