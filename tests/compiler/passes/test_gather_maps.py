"""gather_rearrangements' two ways of finding where each element comes from: by whole rows of the
last axis where the region leaves that axis alone (one number a row), else element by element;
the two agree, and a region that reshapes the last axis is still gathered, from the element map."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.compile import prepare_program
from compiler.onnx.testing import model_of
from compiler.passes.gather_rearrangements import element_map, region_of, row_map
from compiler.passes.pass_manager import run_passes
from compiler.passes.pipelines import simplify_passes

F = TensorProto.FLOAT


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _roll_nodes(src, axis, cut, n, tag):
    """Slices [cut, n) and [0, cut) of ``src`` along ``axis``, concatenated: a roll by -cut."""
    return ([helper.make_node("Slice", [src, f"{tag}_c", f"{tag}_n", f"{tag}_a"], [f"{tag}_hi"]),
             helper.make_node("Slice", [src, f"{tag}_0", f"{tag}_c", f"{tag}_a"], [f"{tag}_lo"]),
             helper.make_node("Concat", [f"{tag}_hi", f"{tag}_lo"], [tag], axis=axis)],
            [_i64(f"{tag}_c", [cut]), _i64(f"{tag}_n", [n]), _i64(f"{tag}_0", [0]), _i64(f"{tag}_a", [axis])])


def _graph(nodes, inits, shape):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"])] + nodes + [helper.make_node("Relu", ["y"], ["out"])],
                              "g", [helper.make_tensor_value_info("x", F, shape)],
                              [helper.make_tensor_value_info("out", F, None)], initializer=inits)
    return model_of(graph, 18)


def rolled_pixels():
    """x (2, 6, 6, 4): roll by 2 along both image axes, then Transpose the image axes: the
    channels (the last axis) are never touched."""
    n1, i1 = _roll_nodes("r", 1, 2, 6, "a")
    n2, i2 = _roll_nodes("a", 2, 2, 6, "b")
    return _graph(n1 + n2 + [helper.make_node("Transpose", ["b"], ["y"], perm=[0, 2, 1, 3])], i1 + i2, [2, 6, 6, 4])


def rolled_flat():
    """x (2, 8, 6) flattened to (2, 48), rolled by one row of 6 along it and by one along the
    batch, shaped back: the last axis is reshaped, so only the element map serves."""
    n1, i1 = _roll_nodes("flat", 1, 6, 48, "a")
    n2, i2 = _roll_nodes("a", 0, 1, 2, "b")
    nodes = [helper.make_node("Reshape", ["r", "s2"], ["flat"])] + n1 + n2 + [helper.make_node("Reshape", ["b", "s3"], ["y"])]
    return _graph(nodes, i1 + i2 + [_i64("s2", [2, 48]), _i64("s3", [2, 8, 6])], [2, 8, 6])


def _region(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    run_passes(program, program.main, simplify_passes())
    last = [i for i in program.main.instructions if i.op == "Concat"][-1]
    return region_of(last)


def test_the_row_map_is_the_element_map_by_rows():
    order, src, out = _region(rolled_pixels())
    rows, elements = row_map(order, src, out), element_map(order, src, out)
    width = src.shape.lens[-1]
    assert rows.shape == tuple(out.shape.lens[:-1])
    np.testing.assert_array_equal(elements, rows[..., None] * width + np.arange(width))


def test_a_region_that_reshapes_the_last_axis_has_no_row_map_and_is_still_gathered():
    onnx_model = rolled_flat()
    order, src, out = _region(onnx_model)
    assert row_map(order, src, out) is None
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "cpu")
    assert "Gather" in [i.op for i in program.main.instructions]
    x = np.random.default_rng(2).standard_normal((2, 8, 6)).astype(np.float32)
    got = compiler.parse_onnx(onnx_model).compile("cpu").run({"x": x})[0]
    want = compiler.parse_onnx(onnx_model).compile("ref").run({"x": x})[0]
    np.testing.assert_array_equal(got, want)
