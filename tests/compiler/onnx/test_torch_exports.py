"""Real PyTorch exports (saved under tests/fixtures/torch_exports/, made by
benchmarks/torch_exports.py) through the compiler on ref and cpu, against ONNX Runtime; plus the
ONNX forms those exports use, built by hand: sequences, model-local functions, opset-9 Upsample."""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.errors import UnsupportedOperatorError
from tests import paths

FIXTURES = paths.FIXTURES / "torch_exports"
EXPORTS = sorted(p.name for p in FIXTURES.glob("*.onnx"))
RTOL = ATOL = 1e-4


def ort_run(model, feeds: dict) -> list:
    data = model if isinstance(model, (str, pathlib.Path)) else model.SerializeToString()
    session = ort.InferenceSession(str(data) if isinstance(data, pathlib.Path) else data,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def symbolic_dims(model: onnx.ModelProto, feeds: dict) -> dict:
    """Each named symbolic input dimension bound to the size the feeds give it."""
    dims = {}
    for value in model.graph.input:
        for k, d in enumerate(value.type.tensor_type.shape.dim):
            if d.dim_param and value.name in feeds:
                dims[d.dim_param] = int(feeds[value.name].shape[k])
    return dims


def run_ours(model_or_path, feeds: dict, target: str, **parse) -> list:
    program = compiler.parse_onnx(model_or_path, **parse)
    program.compile(target)
    return program.run(feeds)


def assert_outputs_close(got: list, want: list) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"output {k}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"output {k}: dtype {g.dtype} != {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"output {k}")


def test_fixtures_present():
    assert len(EXPORTS) >= 5, EXPORTS


@pytest.mark.parametrize("target", ["ref", "cpu"])
@pytest.mark.parametrize("name", EXPORTS)
def test_torch_export_matches_onnxruntime(name: str, target: str):
    path = FIXTURES / name
    with np.load(path.with_suffix(".inputs.npz")) as data:
        feeds = {k: data[k] for k in data.files}
    model = onnx.load(str(path))
    batch = next(iter(feeds.values())).shape[0]
    got = run_ours(str(path), feeds, target, batch_size=batch, dims=symbolic_dims(model, feeds))
    assert_outputs_close(got, ort_run(path, feeds))


# ----- sequences (the dynamo exporter's torch.split / chunk, scripted lists) ------------------
def _model(nodes, inputs, outputs, inits=(), opset=18, functions=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              functions=list(functions))
    model.ir_version = 8
    return model


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _i64(name, values):
    if isinstance(values, list):
        return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
    return helper.make_tensor(name, TensorProto.INT64, [], [values])


def _i64_value(name):
    return helper.make_tensor_value_info(name, TensorProto.INT64, [])


X = np.random.default_rng(0).standard_normal((2, 6, 5)).astype(np.float32)


@pytest.mark.parametrize("split, keepdims", [([1, 2, 3], 1), (4, 1), (None, 0), (None, 1)])
def test_split_to_sequence_then_sequence_at(split, keepdims):
    inits = [] if split is None else [_i64("split", split)]
    nodes = [helper.make_node("SplitToSequence", ["x"] + (["split"] if split is not None else []),
                              ["seq"], axis=1, keepdims=keepdims),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    outs = [_f32("first", None), _f32("last", None), _i64_value("n")]
    inits += [_i64("zero", 0), _i64("minus1", -1)]
    nodes += [helper.make_node("SequenceAt", ["seq", "zero"], ["first"]),
              helper.make_node("SequenceAt", ["seq", "minus1"], ["last"])]
    model = _model(nodes, [_f32("x", [2, 6, 5])], outs, inits)
    want = ort_run(model, {"x": X})
    for target in ("ref", "cpu"):
        assert_outputs_close(run_ours(model, {"x": X}, target), want)


@pytest.mark.parametrize("new_axis, axis", [(0, 0), (0, -1), (1, 0), (1, 2), (1, -1)])
def test_sequence_construct_insert_erase_concat(new_axis, axis):
    inits = [_i64("zero", 0), _i64("one", 1)]
    nodes = [helper.make_node("Neg", ["x"], ["nx"]),
             helper.make_node("SequenceConstruct", ["x", "nx"], ["s1"]),
             helper.make_node("SequenceInsert", ["s1", "x", "zero"], ["s2"]),
             helper.make_node("SequenceInsert", ["s2", "nx"], ["s3"]),
             helper.make_node("SequenceErase", ["s3", "one"], ["s4"]),
             helper.make_node("ConcatFromSequence", ["s4"], ["y"], axis=axis, new_axis=new_axis)]
    model = _model(nodes, [_f32("x", [2, 6, 5])], [_f32("y", None)], inits)
    want = ort_run(model, {"x": X})
    assert_outputs_close(run_ours(model, {"x": X}, "ref"), want)


def _append_loop_model(axis: int, new_axis: int):
    """A loop that appends x * i to a list each iteration, then concatenates the list."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("SequenceInsert", ["acc", "xi"], ["acc_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("acc", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("acc_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
             helper.make_node("Loop", ["trips", "", "empty"], ["seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=new_axis),
             helper.make_node("SequenceAt", ["seq", "minus1"], ["last"]),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    outputs = [_f32("y", None), _f32("last", None), _i64_value("n")]
    return _model(nodes, [_f32("x", [2, 6, 5])], outputs, [_i64("trips", 3), _i64("minus1", -1)])


@pytest.mark.parametrize("new_axis, axis", [(0, 0), (0, 1), (0, -1), (1, 0), (1, 2), (1, -1)])
def test_loop_appending_to_a_sequence_becomes_a_scan_output(new_axis, axis):
    model = _append_loop_model(axis, new_axis)
    want = ort_run(model, {"x": X})
    for target in ("ref", "cpu"):
        assert_outputs_close(run_ours(model, {"x": X}, target), want)


def _run_time_position_model(split):
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
             helper.make_node("SequenceAt", ["seq", "pos"], ["y"])]
    return _model(nodes, [_f32("x", [2, 6, 5]), _i64_value("pos")],
                  [_f32("y", None)], [_i64("split", split)])


@pytest.mark.parametrize("pos", [0, 2, -1])
def test_sequence_at_a_run_time_position_of_equal_elements(pos):
    model = _run_time_position_model(2)
    feeds = {"x": X, "pos": np.array(pos, np.int64)}
    want = ort_run(model, feeds)
    for target in ("ref", "cpu"):
        assert_outputs_close(run_ours(model, feeds, target), want)


def test_sequence_at_a_run_time_position_of_unequal_elements_is_unsupported():
    with pytest.raises(UnsupportedOperatorError, match="SequenceAt.*unequal"):
        compiler.parse_onnx(_run_time_position_model([1, 2, 3]))


# ----- model-local functions -------------------------------------------------------------------
def test_model_local_functions_are_inlined():
    scale_add = helper.make_function(
        "local.fn", "ScaleAdd", ["a", "b"], ["out"],
        [helper.make_node("Constant", [], ["k"], value_float=1.5),
         helper.make_node("Mul", ["a", "k"], ["ak"]),
         helper.make_node("Add", ["ak", "b"], ["out"])],
        [helper.make_opsetid("", 18)])
    nodes = [helper.make_node("ScaleAdd", ["x", "x"], ["t"], domain="local.fn"),
             helper.make_node("ScaleAdd", ["t", "x"], ["y"], domain="local.fn")]
    model = _model(nodes, [_f32("x", [2, 6, 5])], [_f32("y", [2, 6, 5])], functions=[scale_add])
    model.opset_import.append(helper.make_opsetid("local.fn", 1))
    want = ort_run(model, {"x": X})
    assert_outputs_close(run_ours(model, {"x": X}, "cpu"), want)


# ----- opset 9/10 resizing through the version converter ---------------------------------------
@pytest.mark.parametrize("opset, op, mode, scales", [
    (9, "Upsample", "linear", [1, 1, 1.5, 2.5]),
    (9, "Upsample", "nearest", [1, 1, 1.5, 2.5]),
    (10, "Resize", "linear", [1, 1, 0.5, 2.0]),
    (10, "Resize", "nearest", [1, 1, 3.0, 1.5]),
    (10, "Resize", "nearest", [1, 1, 0.5, 0.6]),
])
def test_old_resizing_keeps_asymmetric_coordinates(opset, op, mode, scales):
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 7)).astype(np.float32)
    node = helper.make_node(op, ["x", "s"], ["y"], mode=mode)
    model = _model([node], [_f32("x", [1, 2, 5, 7])], [_f32("y", None)],
                   [helper.make_tensor("s", TensorProto.FLOAT, [4], scales)], opset=opset)
    model.ir_version = 7
    want = ort_run(model, {"x": x})
    for target in ("ref", "cpu"):
        assert_outputs_close(run_ours(model, {"x": x}, target), want)


# ----- dimensions named by formulas (dynamo: dynamic_shapes={2: 8 * Dim("height")}) -----------
def _formula_dims_model():
    node = helper.make_node("Add", ["x", "y"], ["z"])
    return _model([node], [_f32("x", ["batch", 3, "8*height", "width + 1"]),
                           _f32("y", [1, 1, "8*height", "width + 1"])],
                  [_f32("z", ["batch", 3, "8*height", "width + 1"])])


def test_dimension_formulas_follow_their_named_symbols():
    program = compiler.parse_onnx(_formula_dims_model(), batch_size=2,
                                  dims={"height": 2, "width": 4})
    assert program.main.parameters()[0].shape.lens == (2, 3, 16, 5)
    x = np.ones((2, 3, 16, 5), np.float32)
    y = np.arange(80, dtype=np.float32).reshape(1, 1, 16, 5)
    assert_outputs_close(run_ours(_formula_dims_model(), {"x": x, "y": y}, "ref", batch_size=2,
                                  dims={"height": 2, "width": 4}), [x + y])


def test_an_unbound_dimension_formula_names_its_symbols():
    with pytest.raises(compiler.ModelLoadError, match=r"\(8\*height\).*dims=\{'height': N\}"):
        compiler.parse_onnx(_formula_dims_model(), batch_size=2, dims={"width": 4})
