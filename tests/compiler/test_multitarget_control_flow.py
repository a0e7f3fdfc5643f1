"""If/Loop bodies under partition: a body whose instructions agree goes whole into its root
(and its literals are promoted there); mixed bodies stay orchestrated on the host and are
partitioned themselves. Results equal the reference either way."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.compile import prepare_program
from compiler.ir import Program, Shape
from compiler.onnx.testing import model_of

F = Shape("float32", (2, 3))
X = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)


def with_if() -> Program:
    p = Program()
    m = p.main
    x = m.add_parameter("x", F)
    c = m.add_parameter("c", Shape("bool", (1,)))
    r = m.add_instruction("Relu", [x])
    then = p.create_module("then_0")
    t = then.add_instruction("Tanh", [r])
    then.add_return([then.add_instruction("Mul", [t, then.add_literal(np.full((2, 3), 2.0, np.float32))])])
    other = p.create_module("else_0")
    other.add_return([other.add_instruction("Neg", [r])])
    branch = m.add_instruction("If", [c], module_inputs=[then, other])
    e = m.add_instruction("get_tuple_elem", [branch], attrs={"index": 0})
    m.add_return([m.add_instruction("Exp", [e])])
    return p


def test_if_with_agreeing_bodies_goes_whole_into_one_root_with_promoted_literals():
    p = prepare_program(with_if(), ["cpu", "ref"], assign={"Exp": "ref"})
    root = next(p.modules[n] for n, t in p.roots.items() if t == "cpu")
    assert [i.op for i in root.instructions] == ["@param", "@param", "@literal", "Relu", "If",
                                                 "get_tuple_elem", "@return"]
    assert p.modules["then_0"].literals() == []  # promoted into the root
    # (the cpu target may have fused the body's Tanh and Mul: look for the reader, not its place)
    assert any(root.literals()[0] in i.inputs for i in p.modules["then_0"].instructions)


def test_if_with_mixed_bodies_is_orchestrated_and_its_bodies_partitioned():
    p = prepare_program(with_if(), ["cpu", "ref"], assign={"Tanh": "ref"})
    main_ops = [i.op for i in p.main.instructions]
    assert "If" in main_ops and main_ops.index("If") + 1 == main_ops.index("get_tuple_elem", main_ops.index("If"))
    then_calls = [i.attrs["target"] for i in p.modules["then_0"] if i.op == "run_on_target"]
    assert then_calls == ["ref", "cpu"]
    assert [i.attrs["target"] for i in p.modules["else_0"] if i.op == "run_on_target"] == ["cpu"]
    # No tuple crosses into a root.
    for name in p.roots:
        assert all(isinstance(q.shape, Shape) for q in p.modules[name].parameters())


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("targets, assign", [(["cpu", "ref"], {"Tanh": "ref"}),
                                             (["cpu", "ref"], {"Exp": "ref"}),
                                             (["ref", "cpu"], {"Neg": "ref/cpu"}),
                                             ("cpu", None)])
@pytest.mark.parametrize("offload_copy", [True, False])
def test_if_programs_equal_reference(cond, targets, assign, offload_copy):
    feeds = {"x": X, "c": np.array([cond])}
    want = with_if().compile("ref").run(feeds)
    got = with_if().compile(targets, offload_copy=offload_copy, assign=assign).run(feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def loop_model(path):
    """y = x; repeat 3 times: y = tanh(y) * 1.5 + x; also scan-collect y."""
    h = helper
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Tanh", ["y_in"], ["t"], name="body_tanh"),
         h.make_node("Mul", ["t", "k"], ["m"]),
         h.make_node("Add", ["m", "x"], ["y_out"]),
         h.make_node("Identity", ["y_out"], ["scan"])],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         h.make_tensor_value_info("y_in", TensorProto.FLOAT, [2, 3])],
        [h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("y_out", TensorProto.FLOAT, [2, 3]),
         h.make_tensor_value_info("scan", TensorProto.FLOAT, [2, 3])],
        [onnx.numpy_helper.from_array(np.array(1.5, np.float32), "k")])
    graph = h.make_graph(
        [h.make_node("Loop", ["trips", "", "x"], ["y", "ys"], body=body)],
        "loop", [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         h.make_tensor_value_info("ys", TensorProto.FLOAT, [3, 2, 3])],
        [onnx.numpy_helper.from_array(np.array(3, np.int64), "trips")])
    onnx.save(model_of(graph, 17), path)
    return str(path)


@pytest.mark.parametrize("targets, assign", [(["cpu", "ref"], {"body_tanh": "ref"}),
                                             (["cpu", "ref"], {"Loop": "ref"}),
                                             ("cpu", None)])
@pytest.mark.parametrize("offload_copy", [True, False])
def test_loop_programs_equal_reference(tmp_path, targets, assign, offload_copy):
    path = loop_model(tmp_path / "loop.onnx")
    want = compiler.parse_onnx(path).compile("ref").run({"x": X})
    expect_y = X.copy()
    for _ in range(3):
        expect_y = np.tanh(expect_y) * 1.5 + X
    np.testing.assert_allclose(want[0], expect_y, rtol=1e-6)
    got = compiler.parse_onnx(path).compile(targets, offload_copy=offload_copy, assign=assign).run({"x": X})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def model_with_unused_if() -> onnx.ModelProto:
    """Relu's result is the output; an If whose bodies read it has a result nobody uses (what
    remains of a detection export when only its scores are asked for)."""
    def body(op: str, out: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["r"], [out], keepdims=0)], op, [],
                                 [helper.make_tensor_value_info(out, TensorProto.FLOAT, [])])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["unused"], then_branch=body("ReduceMax", "hi"),
                          else_branch=body("ReduceMin", "lo"))],
        "unused_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])],
        initializer=[onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")])
    return model_of(graph, 17)


@pytest.mark.parametrize("targets", ["ref", "cpu", ["cpu", "ref"]])
def test_an_unused_if_goes_with_its_bodies(targets):
    program = compiler.parse_onnx(model_with_unused_if())
    program.compile(targets)
    np.testing.assert_array_equal(program.run({"x": X})[0], np.maximum(X, 0))
    assert not any(i.op == "If" for m in program for i in m.instructions)
    assert len(list(program)) == len(program.roots)  # no orphaned body left behind
