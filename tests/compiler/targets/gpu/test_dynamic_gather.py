"""Gather on data whose gathered axis has no length until the run (a detector's kept boxes:
NonZero, TopK over a count found at run time) wraps negative indices by the run's length. Checked
without a GPU: NumPy standing in for CuPy against the reference target."""
import numpy as np
from onnx import TensorProto, helper

import compiler
from compiler.onnx.testing import model_of
from compiler.targets.gpu.options import GpuOptions


def _kept_boxes():
    """x (6,) -> the positions of its positive values (NonZero: (1, n), n known at run time) ->
    Gather along n at [0, -1] (literal) and at -1 or -2 (computed: -1 - (x[0] > x[1]))."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["positive"]),
             helper.make_node("NonZero", ["positive"], ["kept"]),
             helper.make_node("Gather", ["kept", "ends"], ["first_last"], axis=1),
             helper.make_node("Gather", ["x", "i0"], ["x0"]), helper.make_node("Gather", ["x", "i1"], ["x1"]),
             helper.make_node("Greater", ["x0", "x1"], ["later"]),
             helper.make_node("Cast", ["later"], ["step"], to=TensorProto.INT64),
             helper.make_node("Sub", ["minus_one", "step"], ["back"]),
             helper.make_node("Gather", ["kept", "back"], ["from_end"], axis=1)]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("ends", TensorProto.INT64, [2], [0, -1]),
             helper.make_tensor("i0", TensorProto.INT64, [], [0]), helper.make_tensor("i1", TensorProto.INT64, [], [1]),
             helper.make_tensor("minus_one", TensorProto.INT64, [], [-1])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ("first_last", "from_end")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])], outputs,
                              initializer=inits)
    return model_of(graph, 18)


def test_negative_indices_wrap_by_the_runs_length():
    onnx_model = _kept_boxes()
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=GpuOptions(emulate=True))
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(6).astype(np.float32)
        x[:2] = np.abs(x[:2]) + 0.1               # at least two positive values
        for got, want in zip(program.run({"x": x}), reference.run({"x": x})):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
