"""merge_sibling_products: products of one input by several literal weights become one product
by their concatenation and slices of it, with the reference's result; products that cannot be
merged so are left alone."""
import numpy as np
from onnx import TensorProto, helper

import compiler
from compiler.passes.dead_code_elimination import DeadCodeElimination
from compiler.passes.merge_sibling_products import MergeSiblingProducts
from compiler.passes.pass_manager import run_passes
from tests.compiler.targets.gpu.cases import init, model, vi

RNG = np.random.default_rng(11)


def _projections(widths, biased, shared_weight=False, x_shape=(2, 5, 8)):
    """x -> MatMul(W_i) [-> Add(b_i)] for each width, each output returned (a query, key and
    value projection when three)."""
    nodes, inits, outs = [], [], []
    k = x_shape[-1]
    for i, (n, bias) in enumerate(zip(widths, biased)):
        w = "w0" if shared_weight else f"w{i}"
        if not shared_weight or i == 0:
            inits.append(init(w, RNG.standard_normal((k, n)).astype(np.float32)))
        nodes.append(helper.make_node("MatMul", ["x", w], [f"p{i}"]))
        out = f"p{i}"
        if bias:
            inits.append(init(f"b{i}", RNG.standard_normal(n).astype(np.float32)))
            nodes.append(helper.make_node("Add", [f"p{i}", f"b{i}"], [f"y{i}"]))
            out = f"y{i}"
        nodes.append(helper.make_node("Relu", [out], [f"out{i}"]))
        outs.append(vi(f"out{i}", None, TensorProto.FLOAT))
    return model(nodes, [vi("x", list(x_shape), TensorProto.FLOAT)], outs, inits)


def _merged(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    run_passes(program, program.main, [MergeSiblingProducts(), DeadCodeElimination()])
    return program


def _check(onnx_model, x_shape=(2, 5, 8)):
    x = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    want = compiler.parse_onnx(onnx_model).compile("ref").run(x)
    program = _merged(onnx_model)
    got = program.compile("ref").run(x)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return [i.op for i in program.main.instructions]


def test_query_key_value_become_one_product_with_one_bias():
    ops = _check(_projections([8, 8, 8], [True, True, True]))
    assert ops.count("MatMul") == 1 and ops.count("Add") == 1 and ops.count("Slice") == 3


def test_a_product_without_bias_gets_zeros_in_the_merged_bias():
    ops = _check(_projections([8, 4, 4], [True, False, True]))   # Whisper's key has no bias
    assert ops.count("MatMul") == 1 and ops.count("Add") == 1


def test_gate_and_up_without_bias_on_a_2d_input():
    ops = _check(_projections([6, 6], [False, False], x_shape=(5, 8)), x_shape=(5, 8))
    assert ops.count("MatMul") == 1 and "Add" not in ops and ops.count("Slice") == 2


def test_a_weight_read_twice_is_not_copied_into_a_merge():
    ops = _check(_projections([8, 8], [False, False], shared_weight=True))
    assert ops.count("MatMul") == 2 and "Slice" not in ops


def test_a_single_product_is_left_alone():
    ops = _check(_projections([8], [True]))
    assert ops.count("MatMul") == 1 and "Slice" not in ops
