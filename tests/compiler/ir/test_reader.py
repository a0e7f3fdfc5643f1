"""Reading printed programs back: print(read(print(p))) == print(p) for parsed models, and the
read program computes what the original does."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.ir import Shape, TupleShape
from compiler.ir.reader import ReadError, parse_shape, read_program
from compiler.onnx.testing import model_of, random_feeds


def _onnx_case(name: str) -> onnx.ModelProto:
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return next(t.model for t in load_model_tests(kind="node") if t.name == name)


def _small_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
             helper.make_node("Softmax", ["y"], ["p"])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 10])], inits)
    return model_of(graph, 18)


CASES = {"cnn": _small_cnn, "if": lambda: _onnx_case("test_if"), "loop": lambda: _onnx_case("test_loop11"),
         "lstm": lambda: _onnx_case("test_lstm_with_peepholes"),
         "resize": lambda: _onnx_case("test_resize_upsample_scales_cubic"),
         "maxpool_indices": lambda: _onnx_case("test_maxpool_with_argmax_2d_precomputed_pads")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip(case):
    model = CASES[case]()
    program = compiler.parse_onnx(model, batch_size=2)
    text = program.to_text(full=True)
    again = read_program(text)
    assert again.to_text(full=True) == text
    again.validate()


def test_read_program_computes_the_same():
    model = _small_cnn()
    original = compiler.parse_onnx(model, batch_size=2)
    copy = read_program(original.to_text(full=True))
    feeds = random_feeds(compiler.onnx.testing.node_model("Relu", {"x": ("float32", [2, 3, 8, 8])},
                                                          {"y": ("float32", [2, 3, 8, 8])}))
    want = original.compile("ref").run(feeds)
    got = copy.compile("ref").run(feeds)
    np.testing.assert_array_equal(got[0], want[0])


def test_roots_and_targets_are_read():
    text = ("module main (root, target ref):\n"
            "  %0 = @param \"x\" -> float32[2]\n"
            "  %1 = Relu(%0) @cpu -> float32[2]\n"
            "  @return(%1)\n")
    program = read_program(text)
    assert program.roots == {"main": "ref"}
    relu = program.main.instructions[1]
    assert relu.target == "cpu" and relu.inputs == [program.main.instructions[0]]
    assert program.to_text() == text


def test_digest_literals_cannot_be_read():
    program = compiler.parse_onnx(_small_cnn())
    with pytest.raises(ReadError, match="full=True"):
        read_program(program.to_text())


@pytest.mark.parametrize("text,needle", [
    ("hello", "line 1: expected .module NAME:."),
    ("module main:\n  %0 = @param \"x\" -> float32[2]\n  %2 = Relu(%0) -> float32[2]\n", "line 3"),
    ("module main:\n  %0 = Relu(%5) -> float32[2]\n", "line 2"),
    ("module main:\n  %0 = @param \"x\" -> float32[2] extra\n", "unexpected text"),
])
def test_malformed_listings_name_the_line(text, needle):
    with pytest.raises(ReadError, match=needle):
        read_program(text)


def test_shapes_parse():
    assert parse_shape("float32[1,?,3]")[0] == Shape("float32", (1, None, 3))
    assert parse_shape("int64[]")[0] == Shape("int64", ())
    assert parse_shape("float16[2,3]{1,2}")[0] == Shape("float16", (2, 3), (1, 2))
    assert parse_shape("(bool[2], float32[?])")[0] == TupleShape((Shape("bool", (2,)), Shape("float32", (None,))))
