"""fuse_linear_epilogue: a linear layer's bias, GELU (the op, or its erf or tanh decomposition as
exporters write it) or residual become one fused_linear; look-alikes keep their steps; the fused
program computes what the original does (the gpu target on NumPy, fp16)."""
import math

import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program
from compiler.passes.fuse_linear_epilogue import FuseLinearEpilogue
from compiler.passes.pass_manager import run_passes

from tests.compiler.targets.gpu.cases import init, model, vi

N = helper.make_node


def _erf(root2=math.sqrt(2)):
    return [N("Div", ["h", "r2"], ["d"]), N("Erf", ["d"], ["e"]), N("Add", ["e", "one"], ["a"]),
            N("Mul", ["h", "a"], ["m"]), N("Mul", ["m", "half"], ["y"])], \
        [init("r2", np.float32(root2)), init("one", np.float32(1)), init("half", np.float32(0.5))]


def _tanh():
    return [N("Pow", ["h", "three"], ["p"]), N("Mul", ["p", "c"], ["pc"]), N("Add", ["h", "pc"], ["s"]),
            N("Mul", ["s", "k"], ["sk"]), N("Tanh", ["sk"], ["t"]), N("Add", ["t", "one"], ["a"]),
            N("Mul", ["half", "h"], ["hh"]), N("Mul", ["hh", "a"], ["y"])], \
        [init("three", np.float32(3)), init("c", np.float32(0.044715)), init("k", np.float32(math.sqrt(2 / math.pi))),
         init("one", np.float32(1)), init("half", np.float32(0.5))]


def _linear(tail, tail_inits, residual=False, opset=18):
    rng = np.random.default_rng(4)
    nodes = [N("MatMul", ["x", "w"], ["p"]), N("Add", ["p", "b"], ["h"])] + tail
    inits = [init("w", rng.standard_normal((8, 6)).astype(np.float32) / 3),
             init("b", rng.standard_normal(6).astype(np.float32))] + tail_inits
    inputs = [vi("x", (2, 5, 8))] + ([vi("r", (2, 5, 6))] if residual else [])
    return model(nodes, inputs, [vi("y", None)], inits, opset=opset)


CASES = {
    "erf": (lambda: _linear(*_erf()), {"gelu": "erf", "residual": False}),
    "tanh": (lambda: _linear(*_tanh()), {"gelu": "tanh", "residual": False}),
    "gelu-op": (lambda: _linear([N("Gelu", ["h"], ["y"], approximate="tanh")], [], opset=20),
                {"gelu": "tanh", "residual": False}),
    "residual": (lambda: _linear([N("Add", ["r", "h"], ["y"])], [], residual=True), {"gelu": None, "residual": True}),
    "bias": (lambda: _linear([N("Relu", ["h"], ["y"])], []), {"gelu": None, "residual": False}),
    "not-gelu": (lambda: _linear(*_erf(root2=2.0)), {"gelu": None, "residual": False}),
}


def _fused(onnx_model, fp16=True):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu", fp16=fp16)
    return [i for i in program.main.instructions if i.op == "fused_linear"], program


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_becomes_one_linear(monkeypatch, case):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")      # the target takes fp16 linears
    build, attrs = CASES[case]
    (fused,), program = _fused(build())
    assert fused.attrs == attrs
    remaining = {i.op for i in program.main.instructions}
    assert "MatMul" not in remaining and (attrs["gelu"] is None or not remaining & {"Erf", "Tanh", "Gelu"})


def test_fp32_linears_keep_their_steps(monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    assert _fused(CASES["erf"][0](), fp16=False)[0] == []


def test_a_product_read_twice_is_left_alone():
    onnx_model = _linear([N("Add", ["h", "p"], ["y"])], [])     # the product is read by two adds
    program = compiler.parse_onnx(onnx_model)
    run_passes(program, program.main, [FuseLinearEpilogue(lambda dtype: True)])
    assert not [i for i in program.main.instructions if i.op == "fused_linear"]


@pytest.mark.parametrize("case", ["erf", "tanh", "residual"])
def test_fused_program_matches_reference_on_emulated_device(monkeypatch, case):
    from compiler.targets.gpu import backend
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    backend.load.cache_clear()
    try:
        onnx_model = CASES[case][0]()
        rng = np.random.default_rng(11)
        x = {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(np.float32)
             for v in onnx_model.graph.input}
        want = compiler.parse_onnx(onnx_model).compile("ref").run(x)[0]
        got = compiler.parse_onnx(onnx_model).compile("gpu", fp16=True).run(x)[0]
    finally:
        backend.load.cache_clear()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
