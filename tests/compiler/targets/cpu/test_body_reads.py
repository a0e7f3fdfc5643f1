"""The cpu plan hands a control-flow step's bodies only the values they read from outside
themselves, at any depth: a Loop inside an If reads a value of the main graph two levels up."""
import numpy as np
from onnx import TensorProto, helper

import compiler
from compiler.onnx.testing import model_of
from compiler.targets.cpu.plan import free_values

F = TensorProto.FLOAT


def _nested_model():
    """y = If(flag, then: Loop(3 times: acc = acc * scale + x), else: x), with x and scale read by
    the Loop's body from the main graph."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "scale"], ["scaled"]), helper.make_node("Add", ["scaled", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, [3])])
    then = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["looped"], body=body)], "then", [],
        [helper.make_tensor_value_info("looped", F, [3])])
    otherwise = helper.make_graph([helper.make_node("Identity", ["x"], ["same"])], "else", [],
                                  [helper.make_tensor_value_info("same", F, [3])])
    graph = helper.make_graph(
        [helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=otherwise)], "nested",
        [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", F, [3])],
        [helper.make_tensor("scale", F, [], [1.5]), helper.make_tensor("trips", TensorProto.INT64, [], [3])])
    return model_of(graph, 17)


def test_bodies_read_values_two_levels_up_and_the_cpu_plan_runs_them():
    model = _nested_model()
    cpu = compiler.parse_onnx(model).compile("cpu")
    ref = compiler.parse_onnx(model).compile("ref")
    x = np.array([1.0, -2.0, 0.5], np.float32)
    for flag in (True, False):
        feeds = {"x": x, "flag": np.array(flag)}
        np.testing.assert_array_equal(cpu.run(feeds)[0], ref.run(feeds)[0])
    want = x
    for _ in range(3):
        want = want * np.float32(1.5) + x
    np.testing.assert_allclose(cpu.run({"x": x, "flag": np.array(True)})[0], want, rtol=1e-6)
    main = compiler.parse_onnx(model).main
    if_ins = next(i for i in main.instructions if i.op == "If")
    reads = {v.name or v.op for body in if_ins.module_inputs for v in free_values(body)}
    assert {"x", "scale", "trips"} <= reads and "flag" not in reads
