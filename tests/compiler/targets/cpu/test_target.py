"""The cpu target: its rewrites (batch-norm folding, conv epilogues) compared with expected
modules, and whole models on cpu equal to the reference target."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.ir import Program, Shape
from compiler.onnx.testing import model_of
from compiler.passes.dead_code_elimination import DeadCodeElimination
from compiler.passes.pass_manager import run_passes
from compiler.passes.fold_batchnorm import FoldBatchNorm
from compiler.passes.fuse_conv_epilogue import FuseConvChain

RNG = np.random.default_rng(11)
CONV = {"kernel_shape": [3, 3], "strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1], "group": 1}
X = Shape("float32", (1, 4, 6, 6))


def without_digests(module) -> str:
    return re.sub(r"sha1:[0-9a-f]+", "sha1:...", str(module))


def lit(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_fold_batchnorm_then_fuse_residual_relu():
    w, b = lit(4, 4, 3, 3), lit(4)
    scale, shift, mean, var = lit(4), lit(4), lit(4), np.abs(lit(4)) + 0.5
    p = Program()
    x = p.main.add_parameter("x", X)
    conv = p.main.add_instruction("Conv", [x, p.main.add_literal(w), p.main.add_literal(b)], attrs=CONV)
    bn = p.main.add_instruction("BatchNormalization", [conv] + [p.main.add_literal(v) for v in (scale, shift, mean, var)],
                                attrs={"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0, "outputs": 1})
    add = p.main.add_instruction("Add", [bn, x])
    p.main.add_return([p.main.add_instruction("Relu", [add])])
    run_passes(p, p.main, [FoldBatchNorm(), FuseConvChain(), DeadCodeElimination()])
    p.validate()

    factor = scale / np.sqrt(var + 1e-5)
    e = Program()
    ex = e.main.add_parameter("x", X)
    fw = e.main.add_literal(w * factor.reshape(-1, 1, 1, 1))
    fb = e.main.add_literal((b - mean) * factor + shift)
    e.main.add_return([e.main.add_instruction("fused_conv", [ex, fw, fb, ex], attrs={**CONV, "bias": True, "residual": True, "relu": True})])
    assert without_digests(p.main) == without_digests(e.main)
    for got, expected in zip(p.main.literals(), e.main.literals()):  # float32 rounding apart
        np.testing.assert_allclose(got.value, expected.value, rtol=1e-5, atol=1e-6)


def test_epilogue_not_fused_when_conv_has_other_readers():
    p = Program()
    x = p.main.add_parameter("x", X)
    conv = p.main.add_instruction("Conv", [x, p.main.add_literal(lit(4, 4, 3, 3))], attrs=CONV)
    r = p.main.add_instruction("Relu", [conv])
    p.main.add_return([r, conv])
    before = str(p.main)
    run_passes(p, p.main, [FoldBatchNorm(), FuseConvChain(), DeadCodeElimination()])
    assert str(p.main) == before


def small_convnet(path):
    def t(name, arr):
        return numpy_helper.from_array(arr, name)
    inits = [t("w1", lit(8, 3, 3, 3)), t("b1", lit(8)), t("s", lit(8)), t("o", lit(8)), t("m", lit(8)),
             t("v", np.abs(lit(8)) + 0.5), t("w2", lit(8, 8, 3, 3)), t("w3", lit(8, 1, 3, 3)),
             t("fc", lit(10, 8)), t("fb", lit(10))]
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             n("BatchNormalization", ["c1", "s", "o", "m", "v"], ["n1"]),
             n("Relu", ["n1"], ["r1"]),
             n("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
             n("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             n("Add", ["c2", "p1"], ["a2"]),
             n("Relu", ["a2"], ["r2"]),
             n("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=8),
             n("Erf", ["c3"], ["e3"]),
             n("GlobalAveragePool", ["e3"], ["g"]),
             n("Flatten", ["g"], ["f"]),
             n("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
             n("Softmax", ["y"], ["z"], axis=1)]
    graph = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 10])], inits)
    onnx.save(model_of(graph, 17), path)
    return str(path)


@pytest.mark.parametrize("targets, assign", [("cpu", None), (["cpu", "ref"], {"Softmax": "ref"}),
                                             (["cpu", "ref"], {"Erf": "cpu/ref"})])
@pytest.mark.parametrize("offload_copy", [True, False])
def test_convnet_on_cpu_equals_reference(tmp_path, targets, assign, offload_copy):
    path = small_convnet(tmp_path / "convnet.onnx")
    feeds = {"x": RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)}
    want = compiler.parse_onnx(path, batch_size=2).compile("ref").run(feeds)
    program = compiler.parse_onnx(path, batch_size=2).compile(targets, offload_copy=offload_copy, assign=assign)
    ops = {i.op for m in program for i in m.instructions}
    assert "fused_conv" in ops and "BatchNormalization" not in ops
    got = program.run(feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    for _ in range(2):  # runs reuse prepared buffers: results stay right
        np.testing.assert_allclose(program.run(feeds)[0], want[0], rtol=1e-4, atol=1e-5)
