"""gather_rearrangements: a roll (Slices and a Concat per axis) and a window partition (Reshape,
Transpose, Reshape), as torchvision's Swin exports them, become one Gather of the source's rows;
regions with two sources, or too little to save, stay. The map is found by whole rows of the last
axis where the region leaves that axis alone, else element by element; the two agree, and a
region that reshapes the last axis is still gathered. The cpu target runs the pass; its results
are checked against the reference target on fresh random inputs."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.compile import prepare_program
from compiler.onnx.testing import model_of
from compiler.passes.gather_rearrangements import element_map, region_of, row_map, row_run
from compiler.passes.pass_manager import run_passes
from compiler.passes.pipelines import simplify_passes

from tests.compiler.targets.gpu.window_cases import F, feeds_for, i64_of, roll_nodes, rolled_windows


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "cpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


def _outputs(onnx_model, target):
    program = compiler.parse_onnx(onnx_model)
    program.compile(target)
    result = program.run(feeds_for(onnx_model))
    return [np.asarray(v) for v in (result.values() if isinstance(result, dict) else result)]


def test_roll_and_window_partition_become_one_gather():
    ops = _ops(rolled_windows())
    assert ops.count("Gather") == 1 and not {"Concat", "Slice", "Transpose"} & set(ops)


@pytest.mark.parametrize("kwargs", [{}, {"middle_output": True}, {"b": 1, "size": 12, "window": 6, "c": 8}])
def test_gathered_result_equals_the_reference(kwargs):
    onnx_model = rolled_windows(**kwargs)
    for ours, ref in zip(_outputs(onnx_model, "cpu"), _outputs(onnx_model, "ref")):
        np.testing.assert_array_equal(ours, ref)


def test_a_value_read_in_the_middle_becomes_the_source():
    # the first roll is an output: the region after it is gathered from it, itself stays a Concat
    ops = _ops(rolled_windows(middle_output=True))
    assert ops.count("Gather") == 1 and ops.count("Concat") == 1


def test_a_region_with_two_sources_stays():
    ops = _ops(rolled_windows(second_source=True))
    assert "Gather" not in ops and ops.count("Concat") == 2


def test_runs_are_the_longest_aligned_trailing_blocks():
    assert row_run(np.arange(24).reshape(2, 3, 4)[[1, 0]]) == 12
    assert row_run(np.arange(24).reshape(2, 3, 4)[:, [2, 0, 1]]) == 4
    assert row_run(np.roll(np.arange(12), 1).reshape(3, 4)) == 1      # runs that straddle a row
    assert row_run(np.arange(1, 13).reshape(3, 4)) == 1                # runs off the source's rows


def _relu_around(nodes, inits, shape):
    """x (``shape``) -> Relu -> ``nodes`` (from "r" to "y") -> Relu."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"])] + nodes + [helper.make_node("Relu", ["y"], ["out"])],
                              "g", [helper.make_tensor_value_info("x", F, shape)],
                              [helper.make_tensor_value_info("out", F, None)], initializer=inits)
    return model_of(graph, 18)


def rolled_pixels():
    """x (2, 6, 6, 4): roll by -2 along both image axes, then Transpose the image axes: the
    channels (the last axis) are never touched."""
    n1, i1 = roll_nodes("r", 1, -2, 6, "a")
    n2, i2 = roll_nodes("a", 2, -2, 6, "b")
    return _relu_around(n1 + n2 + [helper.make_node("Transpose", ["b"], ["y"], perm=[0, 2, 1, 3])], i1 + i2,
                        [2, 6, 6, 4])


def rolled_flat():
    """x (2, 8, 6) flattened to (2, 48), rolled by one row of 6 along it and by one along the
    batch, shaped back: the last axis is reshaped, so only the element map serves."""
    n1, i1 = roll_nodes("flat", 1, -6, 48, "a")
    n2, i2 = roll_nodes("a", 0, -1, 2, "b")
    nodes = [helper.make_node("Reshape", ["r", "s2"], ["flat"])] + n1 + n2 + [helper.make_node("Reshape", ["b", "s3"], ["y"])]
    return _relu_around(nodes, i1 + i2 + [i64_of("s2", [2, 48]), i64_of("s3", [2, 8, 6])], [2, 8, 6])


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
    assert "Gather" in _ops(onnx_model)
    for ours, ref in zip(_outputs(onnx_model, "cpu"), _outputs(onnx_model, "ref")):
        np.testing.assert_array_equal(ours, ref)
