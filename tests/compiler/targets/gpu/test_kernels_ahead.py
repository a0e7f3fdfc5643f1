"""Kernel variants compiled ahead (no GPU needed): the variant a depthwise or grouped convolution
asks to compile before lowering is, define for define, the one its launch then takes on fresh
(aligned) buffers; and which convolutions of a model ask for one. On a GPU the same variants are
checked against the reference by test_depthwise.py and test_grouped.py, whose runs now find
them compiled ahead."""
from dataclasses import replace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.targets.gpu import depthwise_conv, kernels_ahead
from compiler.targets.gpu.kernels import depthwise, grouped
from compiler.targets.gpu.kernels.conv import ConvSpec

from tests.compiler.targets.gpu.test_grouped import KERNEL_CASES, spec_of


class _Buffer:
    """What the kernels read of an array to choose a launch: shape, dtype, size and address."""

    def __init__(self, shape, dtype, ptr=1 << 20):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.itemsize, self.size = self.dtype.itemsize, int(np.prod(shape))
        self.data = type("Pointer", (), {"ptr": ptr})()


def _recorded(monkeypatch, module):
    """Stand-ins for ``module``'s compile_ahead_raw and raw_kernel: each records the defines."""
    asked, launched = [], []
    monkeypatch.setattr(module, "compile_ahead_raw", lambda source, name, defines, options=(): asked.append(defines))
    monkeypatch.setattr(module, "raw_kernel", lambda source, name, defines, options=():
                        launched.append(defines) or (lambda grid, block, args: None))
    return asked, launched


def _nhwc(spec, dtype):
    n, c, h, w = spec.x_shape
    _, k, oh, ow = spec.out_shape
    return _Buffer((n, h, w, c), dtype), _Buffer((n, oh, ow, k), dtype)


DEPTHWISE = [  # (N, C, H, W, kernel, stride, pads, dtype, bias, residual)
    (64, 96, 56, 56, 3, 1, 1, "float32", True, False),
    (1, 384, 14, 14, 7, 1, 3, "float16", True, True),       # a small launch: narrower vector and tile
    (32, 24, 112, 112, 5, 2, 2, "float16", False, False),
    (2, 7, 9, 11, 3, 2, 1, "float32", True, False),         # channels no vector divides
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: f"c{c[1]}k{c[4]}s{c[5]}-{c[7]}")
@pytest.mark.parametrize("activation, prologue", [("", ""), ("v = fmaxf(v, 0.0f);", "v = fminf(v, 6.0f);")])
def test_a_depthwise_variant_compiled_ahead_is_the_one_launched(monkeypatch, case, activation, prologue):
    n, c, h, w, k, s, p, dtype, bias, residual = case
    spec = ConvSpec((n, c, h, w), (c, 1, k, k), (p, p), (p, p), (s, s), (1, 1), c, dtype, bias=bias,
                    residual=residual, nhwc=True)
    asked, launched = _recorded(monkeypatch, depthwise)
    depthwise.compile_ahead(spec, activation, prologue)
    x, y = _nhwc(spec, dtype)
    b = _Buffer((c,), dtype) if bias else None
    r = _Buffer(y.shape, dtype) if residual else None
    depthwise.depthwise_nhwc(x, _Buffer((k, k, c), "float32"), b, r, y, spec, activation, prologue)
    assert asked == launched and len(asked) == 1
    assert (asked[0]["ACTIVATION"], asked[0]["PROLOGUE"]) == (activation, prologue)


def test_a_launch_on_a_less_aligned_view_takes_its_own_narrower_variant(monkeypatch):
    spec = ConvSpec((8, 64, 20, 20), (64, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 64, "float32", nhwc=True)
    asked, launched = _recorded(monkeypatch, depthwise)
    depthwise.compile_ahead(spec, "")
    x, y = _nhwc(spec, "float32")
    depthwise.depthwise_nhwc(_Buffer(x.shape, "float32", ptr=(1 << 20) + 4), _Buffer((3, 3, 64), "float32"),
                             None, None, y, spec, "")
    assert asked[0]["VEC"] == 4 and launched[0]["VEC"] == 1


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"c{c[1]}k{c[2]}g{c[3]}-k{c[6]}s{c[7]}")
def test_a_grouped_variant_compiled_ahead_is_the_one_launched(monkeypatch, case):
    spec, attrs = spec_of(case)
    activation = depthwise_conv.activation_of(spec, attrs)
    asked, launched = _recorded(monkeypatch, grouped)
    grouped.compile_ahead(spec, activation)
    x, y = _nhwc(spec, "float32")
    kout, cg, kh, kw = spec.w_shape
    grouped.grouped_nhwc(x, _Buffer((kh, kw, cg, kout), "float32"), _Buffer((kout,), "float32") if spec.bias else None,
                         _Buffer(y.shape, "float32") if spec.residual else None, y, spec, activation)
    assert asked == launched and len(asked) == 1


def _model_with(convs):
    """An ONNX model: one chain of 3x3 convolutions (channels out, groups), ReLU after each."""
    rng = np.random.default_rng(11)
    nodes, inits, x, c = [], [], "x", 32
    for i, (k, groups) in enumerate(convs):
        w = numpy_helper.from_array(rng.standard_normal((k, c // groups, 3, 3)).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1], group=groups),
                  helper.make_node("Relu", [f"c{i}"], [f"y{i}"])]
        x, c = f"y{i}", k
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32, 10, 10])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_module_asks_for_its_depthwise_and_grouped_variants_only(monkeypatch, tmp_path):
    from compiler.onnx.parser import parse_onnx
    from compiler.targets.gpu import conv_split
    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.options import GpuOptions
    monkeypatch.setattr(conv_split, "available", lambda: True)
    monkeypatch.setattr(convk, "device_name", lambda: "a GPU")     # the remembered choices' key
    path = tmp_path / "m.onnx"
    # depthwise, grouped (4 a group), plain, grouped again with the same spec as the first
    path.write_bytes(_model_with([(32, 32), (32, 8), (32, 1), (32, 8)]).SerializeToString())
    program = parse_onnx(str(path))
    asked = []
    monkeypatch.setattr(depthwise, "compile_ahead", lambda spec, activation, prologue="": asked.append(("dw", spec)))
    monkeypatch.setattr(grouped, "compile_ahead", lambda spec, activation: asked.append(("grouped", spec)))
    options = GpuOptions(cache_dir=str(tmp_path / "plans"))
    assert kernels_ahead.start(program.main, options) == 3
    assert [kind for kind, _ in asked] == ["dw", "grouped", "grouped"]
    assert all(spec.nhwc for _, spec in asked) and asked[1][1].group == 8
    # the split-bf16 path forced: the grouped kernel is not among the planned paths
    asked.clear()
    assert kernels_ahead.start(program.main, replace(options, fp32_conv="split-cudnn")) == 1
    assert [kind for kind, _ in asked] == ["dw"]
