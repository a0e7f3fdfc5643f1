"""The gpu target folds ReLU6, SiLU and HardSwish into the depthwise convolutions its depthwise
kernel runs, and into no other convolution (checked without a GPU: passes only)."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.cases import init, model, vi

C = 6


def _conv_then(activation: list, group: int):
    w = np.random.default_rng(0).standard_normal((C, C // group, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=group, pads=[1, 1, 1, 1])] + activation
    bounds = [init("lo", np.float32(0)), init("hi", np.float32(6))] if activation is CLIP else []
    return model(nodes, [vi("x", (1, C, 9, 7))], [vi("y", None)], [init("w", w)] + bounds)


CLIP = [helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]
SILU = [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
HARDSWISH = [helper.make_node("HardSwish", ["c"], ["y"])]


def _prepared(activation, group):
    program = compiler.parse_onnx(_conv_then(activation, group))
    prepare_program(program, "gpu")
    return [i for i in program.main.instructions if i.op in ("Conv", "fused_conv", "fused_pointwise")]


@pytest.mark.parametrize("activation, step", [(CLIP, {"clip": [0.0, 6.0]}), (SILU, {"swish": True}),
                                              (HARDSWISH, {"hardswish": True})])
def test_depthwise_convolution_takes_the_activation(activation, step):
    (conv,) = _prepared(activation, C)
    assert conv.op == "fused_conv" and {k: conv.attrs[k] for k in step} == step


def test_other_convolutions_keep_the_activation_apart():
    assert [i.op for i in _prepared(CLIP, 1)] == ["Conv", "fused_pointwise"]


def test_no_fold_where_the_kernel_does_not_run(monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")      # NumPy stands in: only ReLU is applied
    assert [i.op for i in _prepared(SILU, C)] == ["Conv", "fused_pointwise"]
