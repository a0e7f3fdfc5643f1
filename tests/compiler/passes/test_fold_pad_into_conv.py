"""A zero Pad read only by a convolution becomes the convolution's padding (the cpu target's
rewrites); other Pads stay. Checked against the reference on random inputs."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.cases import init, model, vi

X = (2, 3, 9, 10)


def _model(pads, mode="constant", value=None, conv_pads=(0, 0, 0, 0), second_reader=False, opset=18):
    rng = np.random.default_rng(len(pads) + sum(pads))
    channels = X[1] + pads[1] + pads[5]      # the convolution reads the padded channels too
    inits = [init("w", rng.standard_normal((4, channels, 3, 3)).astype(np.float32))]
    if opset >= 11:
        inits.append(init("p", np.array(pads, np.int64)))
        pad_inputs = ["x", "p"] + (["v"] if value is not None else [])
        if value is not None:
            inits.append(init("v", np.array(value, np.float32)))
        pad = helper.make_node("Pad", pad_inputs, ["xp"], mode=mode)
    else:
        pad = helper.make_node("Pad", ["x"], ["xp"], mode=mode, pads=list(pads), value=float(value or 0))
    nodes = [pad, helper.make_node("Conv", ["xp", "w"], ["y"], strides=[2, 2], pads=list(conv_pads))]
    outputs = [vi("y", None)]
    if second_reader:
        nodes.append(helper.make_node("Relu", ["xp"], ["z"]))
        outputs.append(vi("z", None))
    return model(nodes, [vi("x", X)], outputs, inits, opset=opset)


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "cpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


def _check(onnx_model):
    feeds = {"x": np.random.default_rng(5).standard_normal(X).astype(np.float32)}
    want = compiler.parse_onnx(onnx_model).compile("ref").run(feeds)
    got = compiler.parse_onnx(onnx_model).compile("cpu").run(feeds)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


FOLDS = {
    "same_strided": dict(pads=[0, 0, 0, 0, 0, 0, 1, 1]),
    "with_own_pads": dict(pads=[0, 0, 1, 0, 0, 0, 2, 1], conv_pads=(1, 1, 1, 1)),
    "zero_value_given": dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.0),
    "opset_10": dict(pads=[0, 0, 1, 1, 0, 0, 0, 1], opset=10),
}
STAYS = {
    "reflect": dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"),
    "nonzero_value": dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5),
    "channel_pad": dict(pads=[0, 1, 0, 0, 0, 0, 1, 1]),
    "negative": dict(pads=[0, 0, -1, 0, 0, 0, 1, 1]),
    "second_reader": dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], second_reader=True),
}


@pytest.mark.parametrize("name", sorted(FOLDS))
def test_zero_pads_fold_into_the_convolution(name):
    assert "Pad" not in _ops(_model(**FOLDS[name]))
    _check(_model(**FOLDS[name]))


@pytest.mark.parametrize("name", sorted(STAYS))
def test_other_pads_stay(name):
    assert "Pad" in _ops(_model(**STAYS[name]))
    _check(_model(**STAYS[name]))
