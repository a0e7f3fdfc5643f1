"""The ONNX parser: literals, batch binding, parse-time folding, subgraphs, and the errors a
user gets for bad models."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.errors import BranchNotBuiltError, ModelLoadError, UnsupportedOperatorError
from compiler.ir.reader import read_program
from compiler.onnx.testing import model_of, node_model

F = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, inits=(), opset=18):
    return model_of(helper.make_graph(nodes, "test_graph", inputs, outputs, initializer=list(inits)), opset)


def run(program, **feeds):
    program.compile("ref")
    return program.run(feeds)


# ----- errors --------------------------------------------------------------------------------
def test_unsupported_operator_names_op_node_domain_and_opset():
    model = make_model([helper.make_node("FancyOp", ["x"], ["y"], name="fancy_1")],
                       [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])],
                       opset=17)
    with pytest.raises(UnsupportedOperatorError) as err:
        compiler.parse_onnx(model)
    e = err.value
    assert (e.op_type, e.node_name, e.domain, e.opset) == ("FancyOp", "fancy_1", "", 17)
    assert all(s in str(e) for s in ("FancyOp", "fancy_1", "ai.onnx", "17"))


def test_operator_of_another_domain_is_unsupported_even_if_the_name_exists():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")],
                       [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])])
    model.opset_import.append(helper.make_opsetid("com.example", 3))
    with pytest.raises(UnsupportedOperatorError, match=r"Relu \(domain com.example, opset 3\) at node 'r'"):
        compiler.parse_onnx(model)


def _relu_bytes():
    return node_model("Relu", {"x": ("float32", [4])}, {"y": ("float32", [4])}).SerializeToString()


def test_truncated_file_is_a_one_line_load_error(tmp_path):
    path = tmp_path / "cut.onnx"
    path.write_bytes(_relu_bytes()[:-7])
    with pytest.raises(ModelLoadError) as err:
        compiler.parse_onnx(path)
    assert "cut.onnx" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("content,needle", [(b"", "empty"), (b"this is not a model", "ONNX")])
def test_bad_files(tmp_path, content, needle):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError, match=needle):
        compiler.parse_onnx(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        compiler.parse_onnx(tmp_path / "nope.onnx")


def test_model_from_bytes_and_from_path(tmp_path):
    path = tmp_path / "relu.onnx"
    path.write_bytes(_relu_bytes())
    x = np.array([-1, 2, -3, 4], np.float32)
    for source in (path, str(path), _relu_bytes()):
        np.testing.assert_array_equal(run(compiler.parse_onnx(source), x=x)[0], np.maximum(x, 0))


def test_unsupported_element_type_is_reported():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                       [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    with pytest.raises(UnsupportedOperatorError, match="STRING"):
        compiler.parse_onnx(model)


# ----- values and shapes ---------------------------------------------------------------------
def test_batch_dimension_is_bound():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [helper.make_tensor_value_info("x", F, ["N", 3])],
                       [helper.make_tensor_value_info("y", F, ["N", 3])])
    assert compiler.parse_onnx(model, batch_size=8).main.parameters()[0].shape.lens == (8, 3)
    assert compiler.parse_onnx(model).main.parameters()[0].shape.lens == (1, 3)


def test_other_symbolic_dimension_asks_for_a_value():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", F, ["batch", "seq"])],
                       [helper.make_tensor_value_info("y", F, ["batch", "seq"])])
    with pytest.raises(ModelLoadError, match=r"'x' dimension 1 is symbolic \(seq\).*dims=\{'seq': N\}"):
        compiler.parse_onnx(model, batch_size=2)
    program = compiler.parse_onnx(model, batch_size=2, dims={"seq": 5})
    assert program.main.parameters()[0].shape.lens == (2, 5)


def test_placeholder_names_and_minus_one_are_unknown_lengths_of_their_own_axis():
    """Paddle writes ``?`` (or -1) for every unknown axis: height and width are not one length."""
    x = helper.make_tensor_value_info("x", F, ["?", 3, "?", -1])
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [x], [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(ModelLoadError, match=r"'x' dimension 2 is symbolic \(unnamed\).*dims=\{'x:2': N\}"):
        compiler.parse_onnx(model, dims={"?": 4})
    program = compiler.parse_onnx(model, batch_size=2, dims={"x:2": 4, "x:3": 6})
    assert program.main.parameters()[0].shape.lens == (2, 3, 4, 6)


def test_an_axis_bound_by_input_and_axis_wins_over_its_name():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", F, ["n", "side", "side"])],
                       [helper.make_tensor_value_info("y", F, None)])
    program = compiler.parse_onnx(model, dims={"side": 4, "x:2": 6})
    assert program.main.parameters()[0].shape.lens == (1, 4, 6)


def test_initializers_are_literals_also_when_listed_as_inputs():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", F, [1, 2]), helper.make_tensor_value_info("w", F, [2, 3])],
                       [helper.make_tensor_value_info("y", F, [1, 3])], [numpy_helper.from_array(w, "w")])
    program = compiler.parse_onnx(model)
    assert program.main.parameter_names() == ["x"]
    lit = program.main.literals()[0]
    assert lit.name == "w" and np.array_equal(lit.value, w)
    np.testing.assert_allclose(run(program, x=np.ones((1, 2), np.float32))[0], np.ones((1, 2)) @ w)


def test_pytorch_style_shape_chain_folds_to_a_constant_reshape():
    # x.view(x.size(0), -1) as PyTorch exports it: Shape → Gather → Unsqueeze → Concat → Reshape.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="flatten_view"),
    ]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F, ["batch", 3, 4, 4])],
                       [helper.make_tensor_value_info("y", F, ["batch", 48])])
    program = compiler.parse_onnx(model, batch_size=2)
    ops = [i.op for i in program.main if not i.is_builtin]
    assert ops == ["Reshape"]
    reshape = next(i for i in program.main if i.op == "Reshape")
    assert reshape.attrs["shape"] == [2, -1] and reshape.inputs == program.main.parameters()
    assert reshape.name == "flatten_view" and str(reshape.shape) == "float32[2,48]"
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(program, x=x)[0], x.reshape(2, -1))


def test_graph_outputs_may_be_an_input_or_a_constant():
    c = numpy_helper.from_array(np.array([1.5, 2.5], np.float32), "c")
    model = make_model([], [helper.make_tensor_value_info("x", F, [2])],
                       [helper.make_tensor_value_info("x", F, [2]), helper.make_tensor_value_info("c", F, [2])], [c])
    program = compiler.parse_onnx(model)
    assert program.output_names == ["x", "c"]
    x, c_out = run(program, x=np.array([3, 4], np.float32))
    np.testing.assert_array_equal(x, [3, 4])
    np.testing.assert_array_equal(c_out, [1.5, 2.5])


def test_optional_inputs_fold_into_attributes():
    nodes = [helper.make_node("Clip", ["x", "", "hi"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F, [3])], [helper.make_tensor_value_info("y", F, [3])],
                       [numpy_helper.from_array(np.array(0.5, np.float32), "hi")])
    program = compiler.parse_onnx(model)
    clip = next(i for i in program.main if i.op == "Clip")
    assert clip.attrs == {"min": None, "max": 0.5} and len(clip.inputs) == 1
    np.testing.assert_array_equal(run(program, x=np.array([-1, 0.2, 3], np.float32))[0],
                                  np.array([-1, 0.2, 0.5], np.float32))


def test_auto_pad_and_negative_axes_are_normalised():
    conv = node_model("Conv", {"x": ("float32", [1, 1, 5, 5]), "w": ("float32", [1, 1, 3, 3])},
                      {"y": ("float32", [1, 1, 3, 3])}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
    ins = next(i for i in compiler.parse_onnx(conv).main if i.op == "Conv")
    assert ins.attrs["pads"] == [1, 1, 1, 1] and "auto_pad" not in ins.attrs
    soft = node_model("Softmax", {"x": ("float32", [2, 3])}, {"y": ("float32", [2, 3])}, {"axis": -1})
    assert next(i for i in compiler.parse_onnx(soft).main if i.op == "Softmax").attrs == {"axis": 1}


def test_multi_output_ops_are_followed_by_tuple_reads():
    model = node_model("Split", {"x": ("float32", [6])}, {"a": ("float32", [2]), "b": ("float32", [4])},
                       initializers={"s": np.array([2, 4], np.int64)})
    program = compiler.parse_onnx(model)
    ops = [i.op for i in program.main if not i.is_builtin]
    assert ops == ["Split", "get_tuple_elem", "get_tuple_elem"]
    a, b = run(program, x=np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(b, [2, 3, 4, 5])


def test_old_opset_model_is_converted():
    # opset 11: Squeeze takes axes as an attribute, Clip takes min/max as inputs.
    nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[0]),
             helper.make_node("Clip", ["s", "lo", "hi"], ["y"])]
    inits = [numpy_helper.from_array(np.array(-1, np.float32), "lo"), numpy_helper.from_array(np.array(1, np.float32), "hi")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F, [1, 3])],
                       [helper.make_tensor_value_info("y", F, [3])], inits, opset=11)
    out = run(compiler.parse_onnx(model), x=np.array([[-3, 0.5, 3]], np.float32))[0]
    np.testing.assert_array_equal(out, [-1, 0.5, 1])


# ----- subgraphs -----------------------------------------------------------------------------
def _if_model():
    then = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"])], "then_body", [],
                             [helper.make_tensor_value_info("t", F, [2])],
                             [numpy_helper.from_array(np.array([1, 1], np.float32), "one")])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else_body", [],
                              [helper.make_tensor_value_info("e", F, [2])])
    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then, else_branch=other)
    return make_model([node], [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])])


def test_if_branches_become_submodules_reading_outer_values():
    program = compiler.parse_onnx(_if_model())
    text = str(program)
    assert "If(%0)[main_choose_then_body_0, main_choose_else_body_0]" in text
    assert "Add(%main.1, %0)" in text and "Neg(%main.1)" in text
    program.validate()
    program.compile("ref")
    x = np.array([2, -3], np.float32)
    np.testing.assert_array_equal(program.run({"c": np.array(True), "x": x})[0], x + 1)
    np.testing.assert_array_equal(program.run({"c": np.array(False), "x": x})[0], -x)


def _if_model_with_a_branch_for_other_lengths():
    """The else branch reshapes x to three elements (as a model scripted for several input lengths
    does), which x of two elements cannot be; a nested If inside it is built before that fails."""
    inner = helper.make_node("If", ["c"], ["n"], then_branch=helper.make_graph(
        [helper.make_node("Neg", ["x"], ["a"])], "inner_then", [], [helper.make_tensor_value_info("a", F, [2])]),
        else_branch=helper.make_graph([helper.make_node("Abs", ["x"], ["b"])], "inner_else", [],
                                      [helper.make_tensor_value_info("b", F, [2])]))
    other = helper.make_graph([inner, helper.make_node("Reshape", ["n", "three"], ["e"])], "else_body", [],
                              [helper.make_tensor_value_info("e", F, None)],
                              [numpy_helper.from_array(np.array([3], np.int64), "three")])
    model = _if_model()
    next(a for a in model.graph.node[0].attribute if a.name == "else_branch").g.CopyFrom(other)
    return model


def test_an_if_branch_that_cannot_be_built_raises_only_when_it_is_taken():
    model = _if_model_with_a_branch_for_other_lengths()
    program = compiler.parse_onnx(model)
    assert sorted(program.modules) == ["main", "main_choose_else_branch_unbuildable_0", "main_choose_then_body_0"]
    program.validate()
    again = read_program(program.to_text(full=True))
    assert again.to_text(full=True) == program.to_text(full=True)
    for target in ("ref", "cpu"):
        program = compiler.parse_onnx(model)
        program.compile(target)
        x = np.array([2, -3], np.float32)
        np.testing.assert_array_equal(program.run({"c": np.array(True), "x": x})[0], x + 1)
        with pytest.raises(BranchNotBuiltError, match=r"node 'choose' \(If\): its else_branch cannot run on inputs of "
                                            r"the shapes the program was compiled for: node .*Reshape"):
            program.run({"c": np.array(False), "x": x})


def test_an_if_with_no_branch_that_can_be_built_is_refused():
    model = _if_model_with_a_branch_for_other_lengths()
    for attribute in model.graph.node[0].attribute:
        attribute.g.CopyFrom(next(a for a in model.graph.node[0].attribute if a.name == "else_branch").g)
    with pytest.raises(ModelLoadError, match="Reshape"):
        compiler.parse_onnx(model)


def test_loop_runs_its_body_with_carried_and_scan_values():
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["acc_out", "fi"], ["scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])])
    node = helper.make_node("Loop", ["n", "", "acc0"], ["acc", "scans"], name="loop", body=body)
    model = make_model([node], [helper.make_tensor_value_info("x", F, [2]), helper.make_tensor_value_info("acc0", F, [2])],
                       [helper.make_tensor_value_info("acc", F, [2]), helper.make_tensor_value_info("scans", F, [3, 2])],
                       [numpy_helper.from_array(np.array(3, np.int64), "n")])
    program = compiler.parse_onnx(model)
    loop = next(i for i in program.main if i.op == "Loop")
    assert loop.attrs == {"has_max": True, "has_cond": False, "carried": 1}
    assert str(loop.shape) == "(float32[2], float32[3,2])"
    x, acc0 = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    acc, scans = run(program, x=x, acc0=acc0)
    np.testing.assert_array_equal(acc, acc0 + 3 * x)
    np.testing.assert_array_equal(scans, [(acc0 + x) * 0, (acc0 + 2 * x) * 1, (acc0 + 3 * x) * 2])


def test_external_data_is_read_from_the_model_folder(tmp_path):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float16)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Cast", ["b"], ["bf"], to=F),
                        helper.make_node("Add", ["m", "bf"], ["y"])],
                       [helper.make_tensor_value_info("x", F, [2, 64])], [helper.make_tensor_value_info("y", F, [2, 32])],
                       [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    program = compiler.parse_onnx(path)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(run(program, x=x)[0], x @ w + b.astype(np.float32), rtol=1e-5)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 10)
    with pytest.raises(ModelLoadError, match="past the end"):
        compiler.parse_onnx(path)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(ModelLoadError, match="weights.bin is missing"):
        compiler.parse_onnx(path)


def test_if_with_a_constant_condition_is_its_taken_branch():
    model = _if_model()
    model.graph.input.pop(0)  # the condition becomes a constant
    model.graph.initializer.append(numpy_helper.from_array(np.array(False), "c"))
    program = compiler.parse_onnx(model)
    assert [i.op for i in program.main if not i.is_builtin] == ["Neg"]
    assert list(program.modules) == ["main"]
    np.testing.assert_array_equal(run(program, x=np.array([1, -2], np.float32))[0], [-1, 2])


def test_shape_of_a_static_value_is_a_literal_and_size_too():
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1), helper.make_node("Size", ["x"], ["n"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3, 5])],
                       [helper.make_tensor_value_info("s", TensorProto.INT64, [2]),
                        helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    program = compiler.parse_onnx(model, batch_size=4)
    assert [i.op for i in program.main if not i.is_builtin] == []
    s, n = run(program, x=np.zeros((4, 3, 5), np.float32))
    assert s.tolist() == [3, 5] and int(n) == 60 and s.dtype == np.int64


@pytest.mark.parametrize("node,needle", [
    (helper.make_node("Concat", ["x", "x"], ["y"], name="cat"), r"node 'cat' \(Concat\): missing attribute 'axis'"),
    (helper.make_node("Add", ["x", "z"], ["y"], name="add"), r"node 'add' \(Add\): cannot broadcast"),
    (helper.make_node("Relu", ["nothing"], ["y"], name="relu"), r"node 'relu' reads 'nothing'"),
])
def test_malformed_graphs_name_the_node(node, needle):
    model = make_model([node], [helper.make_tensor_value_info("x", F, [2, 3]), helper.make_tensor_value_info("z", F, [4])],
                       [helper.make_tensor_value_info("y", F, [2, 3])])
    with pytest.raises(ModelLoadError, match=needle):
        compiler.parse_onnx(model)
