"""Large weights read in place (``raw_weights`` and ``load.load_for_import``): the same literals as
decoding the whole model, from a file and from bytes, every element type; and malformed or unusual
models decoded whole, with the errors they gave before."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import CompileError, ModelLoadError, UserError
from compiler.onnx import raw_weights
from compiler.onnx.load import load_for_import
from compiler.onnx.parser import parse_onnx

BIG = raw_weights.MIN_BYTES // 2 + 7      # elements: large enough for every type of two bytes or more


def _model(inits, opset=17, extra_nodes=()):
    """y = x + sum of ``inits`` cast to float32 (each used, so none is dead)."""
    nodes, last = [], "x"
    for k, t in enumerate(inits):
        nodes.append(helper.make_node("Cast", [t.name], [f"c{k}"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("ReduceSum", [f"c{k}"], [f"s{k}"], keepdims=0))
        nodes.append(helper.make_node("Add", [last, f"s{k}"], [f"a{k}"]))
        last = f"a{k}"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    graph = helper.make_graph(nodes + list(extra_nodes), "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _inits(rng):
    odd = 3 * BIG + 1       # an odd byte length before the next tensor's data: misaligned offsets
    return [numpy_helper.from_array(rng.standard_normal(BIG).astype(np.float32), "f32"),
            numpy_helper.from_array(rng.integers(0, 255, odd, dtype=np.uint8), "u8"),
            numpy_helper.from_array(rng.standard_normal((BIG // 4, 4)).astype(np.float16), "f16"),
            numpy_helper.from_array(rng.integers(-9, 9, BIG, dtype=np.int64), "i64"),
            numpy_helper.from_array(rng.standard_normal(BIG), "f64"),
            numpy_helper.from_array(rng.integers(0, 2, raw_weights.MIN_BYTES + 3).astype(bool), "b"),
            numpy_helper.from_array(np.arange(5, dtype=np.float32), "small")]


def _load_whole(model_or_path):
    """What loading gave before the walk: the model decoded whole (the walk made to take nothing)."""
    walk = raw_weights.split_weights
    raw_weights.split_weights = lambda data, min_bytes=0: None
    try:
        return load_for_import(model_or_path)
    finally:
        raw_weights.split_weights = walk


def _literals(program):
    return {i.name: i.value for i in program.main.instructions if i.op == "@literal" and i.name}


def _whole_literals(data):
    whole = onnx.ModelProto.FromString(data)
    return {t.name: numpy_helper.to_array(t) for t in whole.graph.initializer}


@pytest.mark.parametrize("source", ["file", "bytes"])
def test_large_weights_read_in_place_are_the_literals_whole_decoding_gives(tmp_path, source):
    data = _model(_inits(np.random.default_rng(5))).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    loaded = load_for_import(str(path) if source == "file" else data)
    assert sorted(loaded.weights) == ["b", "f16", "f32", "f64", "i64", "u8"]      # "small" stays decoded
    assert not any(t.raw_data for t in loaded.model.graph.initializer if t.name in loaded.weights)
    got = _literals(parse_onnx(str(path) if source == "file" else data))
    for name, want in _whole_literals(data).items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want)
        assert got[name].flags.aligned and got[name].flags.c_contiguous
    assert loaded.base_dir == (str(tmp_path) if source == "file" else None)


def test_the_model_without_its_weights_is_the_model_less_their_raw_data():
    data = _model(_inits(np.random.default_rng(6))).SerializeToString()
    stripped, spans = raw_weights.split_weights(data)
    expected = onnx.ModelProto.FromString(data)
    for span in spans:
        tensor = expected.graph.initializer[span.index]
        assert data[span.offset:span.offset + span.length] == tensor.raw_data
        assert span.data_type == tensor.data_type
        tensor.ClearField("raw_data")
    assert onnx.ModelProto.FromString(stripped) == expected


def test_types_without_a_plain_layout_and_old_opsets_are_decoded_whole(tmp_path):
    bf16 = helper.make_tensor("bf", TensorProto.BFLOAT16, [BIG], np.zeros(BIG, np.uint16).tobytes(), raw=True)
    assert load_for_import(_model([bf16]).SerializeToString()).weights == {}
    old = _model(_inits(np.random.default_rng(7))[:1], opset=11).SerializeToString()
    assert raw_weights.split_weights(old) is not None and load_for_import(old).weights == {}


def test_repeated_names_and_wrong_lengths_are_decoded_whole_and_fail_as_before():
    rng = np.random.default_rng(8)
    a = numpy_helper.from_array(rng.standard_normal(BIG).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(BIG).astype(np.float32), "w")
    assert load_for_import(_model([a, b]).SerializeToString()).weights == {}
    short = numpy_helper.from_array(rng.standard_normal(BIG).astype(np.float32), "w")
    short.dims[0] = BIG + 1                 # the raw data is one element short of its shape
    data = _model([short]).SerializeToString()
    assert load_for_import(data).weights == {}
    with pytest.raises(Exception) as in_place:
        parse_onnx(data)
    with pytest.raises(Exception) as whole:
        from compiler.onnx.parser import GraphImporter
        GraphImporter(_load_whole(data).model, None, None, {})
    assert type(in_place.value) is type(whole.value)


def test_external_data_stays_external(tmp_path):
    model = _model(_inits(np.random.default_rng(9))[:1])
    want = numpy_helper.to_array(model.graph.initializer[0])
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="ext.bin", size_threshold=0)
    assert load_for_import(str(path)).weights == {}
    np.testing.assert_array_equal(_literals(parse_onnx(str(path)))["f32"], want)


def test_damaged_models_fail_with_the_errors_whole_decoding_gives():
    """Truncated or flipped bytes: the walk never raises, and loading fails (or succeeds) as
    decoding the whole model does."""
    data = _model(_inits(np.random.default_rng(10))[:3]).SerializeToString()
    rng = np.random.default_rng(11)
    cuts = [int(c) for c in rng.integers(1, len(data), 40)] + [1, 2, len(data) - 1]
    damaged = [data[:c] for c in cuts]
    for _ in range(40):
        flipped = bytearray(data)
        flipped[int(rng.integers(0, 400))] ^= int(rng.integers(1, 256))
        damaged.append(bytes(flipped))
    for bad in damaged:
        raw_weights.split_weights(bad)               # returns spans or None, never raises

        def outcome(load):
            try:
                load(bad)
                return "ok"
            except (ModelLoadError, UserError, CompileError, ValueError) as e:
                return type(e).__name__
        assert outcome(load_for_import) == outcome(_load_whole), bad[:16]


def test_the_structure_is_the_model_less_its_large_raw_data_and_counts_the_same(tmp_path):
    from models.stats import count_flops, count_parameters
    from compiler.onnx.load import load_structure
    model = _model(_inits(np.random.default_rng(12)))
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    structure = load_structure(str(path))
    expected = onnx.ModelProto.FromString(model.SerializeToString())
    for tensor in expected.graph.initializer:
        if len(tensor.raw_data) >= raw_weights.MIN_BYTES:
            tensor.ClearField("raw_data")
    assert structure == expected and load_structure(model.SerializeToString()) == expected
    assert count_parameters(structure) == count_parameters(model) and count_flops(structure) == count_flops(model)
    with pytest.raises(ModelLoadError):
        load_structure(model.SerializeToString()[:-9])
