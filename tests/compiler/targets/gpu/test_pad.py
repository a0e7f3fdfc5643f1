"""Pad's own lowering (``ops_pad``) against the reference target, without a GPU (NumPy standing
in for CuPy): constant pads in the input's memory order, negative pads that crop, reflect and
edge pads, and pads known only at run time left to the fallback."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.onnx.testing import model_of
from compiler.targets.gpu.ops_pad import PadPlan, constant_pad, library_pad
from compiler.targets.gpu.options import GpuOptions
from tests.compiler.targets.gpu.cases import build, feeds_for

EMULATED = GpuOptions(emulate=True)


def _pad_model(shape, pads, mode="constant", value=None, axes=None):
    names = ["x", "p"] + (["v"] if value is not None or axes is not None else []) + (["a"] if axes is not None else [])
    inits = [helper.make_tensor("p", TensorProto.INT64, [len(pads)], pads)]
    if value is not None or axes is not None:
        inits.append(helper.make_tensor("v", TensorProto.FLOAT, [], [value if value is not None else 0.0]))
    if axes is not None:
        inits.append(helper.make_tensor("a", TensorProto.INT64, [len(axes)], axes))
    graph = helper.make_graph([helper.make_node("Pad", names, ["y"], mode=mode)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return model_of(graph, 18)


def _check(onnx_model, seeds=(0, 1)):
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=EMULATED)
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    for seed in seeds:
        feeds = feeds_for(reference, seed)
        for got, want in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["pad_const", "pad_reflect", "pad_edge", "pad_crop_axes"])
def test_cases_match_the_reference(name):
    import onnx
    _check(onnx.load_from_string(build(name)))


@pytest.mark.parametrize("pads, mode", [
    ([0, 0, -1, 2, 0, 0, 3, -2], "constant"),      # crop and pad on one axis, both ends
    ([0, 0, 1, 1, 0, 0, 1, 1], "reflect"),
    ([0, 0, -1, 0, 0, 0, 2, 1], "reflect"),        # the reflection reads what the crop takes off
    ([1, 0, 0, 2, 0, 1, 0, 0], "edge"),
])
def test_pads_and_crops_match_the_reference(pads, mode):
    _check(_pad_model([2, 3, 5, 6], pads, mode=mode, value=0.5 if mode == "constant" else None))


def test_constant_pad_keeps_a_channels_last_input_channels_last():
    x = np.random.default_rng(3).standard_normal((2, 5, 4, 3)).astype(np.float32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    plan = PadPlan(((0, 0), (0, 0), (1, 2), (2, 1)), (slice(0, None),) * 4, "constant", -2.0)
    got = constant_pad(np, nhwc, plan)
    want = np.pad(x, plan.widths, constant_values=-2.0)
    np.testing.assert_array_equal(got, want)
    assert got.strides[1] == got.itemsize        # channels packed per pixel, as the input was
    assert got.transpose(0, 2, 3, 1).flags.c_contiguous
    plain = constant_pad(np, x, plan)
    assert plain.flags.c_contiguous
    np.testing.assert_array_equal(plain, want)


def test_reflect_pad_of_a_channels_last_input_matches_and_keeps_its_layout():
    x = np.random.default_rng(4).standard_normal((2, 3, 5, 4)).astype(np.float32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    plan = PadPlan(((0, 0), (0, 0), (2, 1), (1, 2)), (slice(0, None),) * 4, "reflect", 0)
    got = library_pad(np, nhwc, plan)
    np.testing.assert_array_equal(got, np.pad(x, plan.widths, mode="reflect"))
    assert got.strides[1] == got.itemsize


def test_library_pad_crops_after_reflecting():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    plan = PadPlan(((0, 0), (2, 0)), (slice(0, None), slice(0, -1)), "reflect", 0)
    np.testing.assert_array_equal(library_pad(np, x, plan), [[2, 1, 0, 1, 2, 3, 4]])


def test_run_time_pads_are_not_lowered_here():
    """Pads that a graph input gives: no plan, so the op takes the fallback path, and still
    matches the reference."""
    graph = helper.make_graph([helper.make_node("Pad", ["x", "p"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("p", TensorProto.INT64, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx_model = model_of(graph, 18)
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=EMULATED)
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    x = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    p = np.array([1, 0, 0, 2], np.int64)
    np.testing.assert_array_equal(np.asarray(program.run({"x": x, "p": p})[0]),
                                  np.asarray(reference.run({"x": x, "p": p})[0]))
