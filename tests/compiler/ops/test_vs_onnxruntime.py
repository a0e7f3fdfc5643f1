"""Op families against ONNX Runtime on seeded, non-zero random inputs — attribute combinations
that onnx's node tests cover thinly (groups, dilations, auto_pad, ceil mode, antialias, ...)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.onnx.testing import node_model, random_feeds, run_compiler, run_ort

F32 = "float32"


def check(model, rtol=1e-4, atol=1e-5, seed=0, feeds=None):
    feeds = feeds or random_feeds(model, seed)
    want = run_ort(model, feeds)
    got = run_compiler(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)


UNARY = ["Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Abs", "Neg", "Reciprocal", "Floor", "Ceil",
         "Sign", "Sin", "Cos", "Softplus", "Softsign", "HardSwish", "Mish", "Round", "Atan"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    check(node_model(op, {"x": (F32, [2, 3, 4])}, {"y": (F32, [2, 3, 4])}))


@pytest.mark.parametrize("op,attrs", [
    ("LeakyRelu", {"alpha": 0.3}), ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.5}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("ThresholdedRelu", {"alpha": 0.5}),
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
])
def test_unary_with_attributes(op, attrs):
    check(node_model(op, {"x": (F32, [3, 5])}, {"y": (F32, [3, 5])}, attrs, opset=20))


def test_log_and_sqrt_of_positive_values():
    for op in ("Log", "Sqrt"):
        model = node_model(op, {"x": (F32, [4, 4])}, {"y": (F32, [4, 4])})
        feeds = {"x": np.abs(random_feeds(model)["x"])}
        check(model, feeds=feeds)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu", "Pow"])
def test_binary_broadcast(op):
    model = node_model(op, {"a": (F32, [2, 3, 4]), "b": (F32, [3, 1])}, {"y": (F32, [2, 3, 4])})
    feeds = random_feeds(model)
    if op == "Pow":
        feeds["a"] = np.abs(feeds["a"])
    check(model, feeds=feeds)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op):
    model = node_model(op, {"a": ("int32", [3, 4]), "b": ("int32", [4])}, {"y": ("bool", [3, 4])})
    check(model)


def test_integer_division_truncates_toward_zero():
    model = node_model("Div", {"a": ("int32", [6]), "b": ("int32", [6])}, {"y": ("int32", [6])})
    feeds = {"a": np.array([7, -7, 7, -7, 1, -1], np.int32), "b": np.array([2, 2, -2, -2, 3, 3], np.int32)}
    check(model, feeds=feeds)


@pytest.mark.parametrize("attrs,w_shape,y_shape", [
    ({"pads": [1, 1, 1, 1]}, [4, 3, 3, 3], [2, 4, 8, 8]),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, [4, 3, 3, 3], [2, 4, 4, 4]),
    ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, [4, 3, 2, 2], [2, 4, 4, 4]),
    ({"dilations": [2, 2], "pads": [2, 1, 0, 1]}, [4, 3, 3, 3], [2, 4, 6, 8]),
    ({"group": 3}, [6, 1, 3, 3], [2, 6, 6, 6]),
])
def test_conv(attrs, w_shape, y_shape):
    model = node_model("Conv", {"x": (F32, [2, 3, 8, 8]), "w": (F32, w_shape), "b": (F32, [w_shape[0]])},
                       {"y": (F32, y_shape)}, attrs)
    check(model)


def test_conv_1d_and_3d():
    check(node_model("Conv", {"x": (F32, [1, 2, 9]), "w": (F32, [3, 2, 4])}, {"y": (F32, [1, 3, 3])},
                     {"strides": [2]}))
    check(node_model("Conv", {"x": (F32, [1, 2, 4, 5, 6]), "w": (F32, [3, 2, 2, 3, 2])},
                     {"y": (F32, [1, 3, 3, 3, 5])}))


@pytest.mark.parametrize("attrs,y_shape", [
    ({"strides": [2, 2]}, [1, 4, 9, 9]),
    ({"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 1]}, [1, 4, 8, 10]),
    ({"group": 2, "dilations": [2, 1]}, [1, 4, 8, 6]),
])
def test_conv_transpose(attrs, y_shape):
    cin = 4
    wout = 4 // attrs.get("group", 1)
    model = node_model("ConvTranspose", {"x": (F32, [1, cin, 4, 4]), "w": (F32, [cin, wout, 3, 3]),
                                         "b": (F32, [4])}, {"y": (F32, y_shape)}, attrs)
    check(model)


@pytest.mark.parametrize("op,attrs,y_shape", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [1, 2, 4, 4]),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, [1, 2, 4, 4]),
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2]}, [1, 2, 3, 3]),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [1, 2, 4, 4]),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                     "count_include_pad": 1}, [1, 2, 4, 4]),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, [1, 2, 4, 4]),
    ("AveragePool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}, [1, 2, 7, 7]),
])
def test_pools(op, attrs, y_shape):
    check(node_model(op, {"x": (F32, [1, 2, 7, 7])}, {"y": (F32, y_shape)}, attrs))


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op):
    check(node_model(op, {"x": (F32, [2, 3, 5, 4])}, {"y": (F32, [2, 3, 1, 1])}))


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions(op, keepdims):
    shape = [2, 1, 4] if keepdims else [2, 4]
    model = node_model(op, {"x": (F32, [2, 3, 4])}, {"y": (F32, shape)}, {"keepdims": keepdims},
                       initializers={"axes": np.array([-2], np.int64)})
    check(model)


def test_softmax_family():
    for op in ("Softmax", "LogSoftmax"):
        for axis in (0, 1, -1):
            check(node_model(op, {"x": (F32, [3, 4, 5])}, {"y": (F32, [3, 4, 5])}, {"axis": axis}))


def test_normalizations():
    check(node_model("BatchNormalization", {"x": (F32, [2, 3, 4, 4])}, {"y": (F32, [2, 3, 4, 4])},
                     initializers={"s": np.array([1.0, 2.0, 0.5], np.float32), "b": np.array([0.1, 0.2, 0.3], np.float32),
                                   "m": np.array([0.5, -0.5, 0.0], np.float32), "v": np.array([1.0, 2.0, 0.5], np.float32)}))
    check(node_model("InstanceNormalization", {"x": (F32, [2, 3, 5]), "s": (F32, [3]), "b": (F32, [3])},
                     {"y": (F32, [2, 3, 5])}))
    check(node_model("LayerNormalization", {"x": (F32, [2, 3, 6]), "s": (F32, [3, 6]), "b": (F32, [3, 6])},
                     {"y": (F32, [2, 3, 6])}, {"axis": 1}))


def test_gemm_matmul_einsum():
    check(node_model("Gemm", {"a": (F32, [4, 3]), "b": (F32, [5, 4]), "c": (F32, [5])}, {"y": (F32, [3, 5])},
                     {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}))
    check(node_model("MatMul", {"a": (F32, [2, 1, 3, 4]), "b": (F32, [5, 4, 2])}, {"y": (F32, [2, 5, 3, 2])}))
    check(node_model("MatMul", {"a": (F32, [4]), "b": (F32, [2, 4, 3])}, {"y": (F32, [2, 3])}))
    check(node_model("Einsum", {"a": (F32, [2, 3, 4]), "b": (F32, [2, 4, 5])}, {"y": (F32, [2, 5, 3])},
                     {"equation": "bij,bjk->bki"}), rtol=1e-4)


def test_layout_ops():
    check(node_model("Transpose", {"x": (F32, [2, 3, 4])}, {"y": (F32, [4, 2, 3])}, {"perm": [2, 0, 1]}))
    check(node_model("DepthToSpace", {"x": (F32, [1, 8, 2, 3])}, {"y": (F32, [1, 2, 4, 6])},
                     {"blocksize": 2, "mode": "CRD"}))
    check(node_model("SpaceToDepth", {"x": (F32, [1, 2, 4, 6])}, {"y": (F32, [1, 8, 2, 3])}, {"blocksize": 2}))
    check(node_model("Tile", {"x": (F32, [2, 3])}, {"y": (F32, [4, 9])},
                     initializers={"r": np.array([2, 3], np.int64)}))
    check(node_model("Expand", {"x": (F32, [3, 1])}, {"y": (F32, [2, 3, 4])},
                     initializers={"s": np.array([2, 1, 4], np.int64)}))
    check(node_model("Trilu", {"x": (F32, [4, 5])}, {"y": (F32, [4, 5])}, {"upper": 0},
                     initializers={"k": np.array(-1, np.int64)}))


def test_slice_pad_gather():
    check(node_model("Slice", {"x": (F32, [5, 6])}, {"y": (F32, [2, 2])},
                     initializers={"s": np.array([4, 1], np.int64), "e": np.array([0, 100], np.int64),
                                   "a": np.array([0, 1], np.int64), "st": np.array([-2, 3], np.int64)}))
    for mode in ("constant", "reflect", "edge", "wrap"):
        check(node_model("Pad", {"x": (F32, [3, 4])}, {"y": (F32, [5, 7])}, {"mode": mode},
                         initializers={"p": np.array([1, 2, 1, 1], np.int64)}, opset=19))
    check(node_model("Gather", {"x": (F32, [5, 4]), "i": ("int64", [2, 3])}, {"y": (F32, [5, 2, 3])},
                     {"axis": 1}), feeds={"x": np.arange(20, dtype=np.float32).reshape(5, 4) + 1,
                                          "i": np.array([[0, -1, 2], [3, 1, -4]], np.int64)})
    check(node_model("GatherElements", {"x": (F32, [3, 4]), "i": ("int64", [3, 2])}, {"y": (F32, [3, 2])},
                     {"axis": 1}), feeds={"x": np.arange(12, dtype=np.float32).reshape(3, 4) + 1,
                                          "i": np.array([[0, 3], [-1, 1], [2, 2]], np.int64)})


def test_split_and_topk_multi_output():
    check(node_model("Split", {"x": (F32, [7, 3])}, {"a": (F32, [2, 3]), "b": (F32, [5, 3])},
                     initializers={"s": np.array([2, 5], np.int64)}))
    check(node_model("TopK", {"x": (F32, [3, 6])}, {"v": (F32, [3, 2]), "i": ("int64", [3, 2])}, {"largest": 0},
                     initializers={"k": np.array([2], np.int64)}))


@pytest.mark.parametrize("attrs,scales,out", [
    ({"mode": "nearest"}, [1, 1, 2, 3], [1, 2, 8, 15]),
    ({"mode": "linear"}, [1, 1, 2, 2], [1, 2, 8, 10]),
    # Scales that give whole output lengths: for others ONNX Runtime and onnx's reference
    # disagree on align_corners (rounded vs exact resized length); we follow the reference.
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 1, 1.5, 2], [1, 2, 6, 10]),
    ({"mode": "cubic"}, [1, 1, 2, 2], [1, 2, 8, 10]),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
     [1, 1, 0.5, 0.6], [1, 2, 2, 3]),
])
def test_resize(attrs, scales, out):
    model = node_model("Resize", {"x": (F32, [1, 2, 4, 5])}, {"y": (F32, out)},
                       dict(attrs, _inputs=["x", "", "scales"]),
                       initializers={"scales": np.array(scales, np.float32)})
    check(model)


@pytest.mark.parametrize("op,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_recurrent(op, gates, direction):
    dirs = 2 if direction == "bidirectional" else 1
    h, seq, batch, size = 5, 4, 2, 3
    outputs = {"y": (F32, [seq, dirs, batch, h]), "yh": (F32, [dirs, batch, h])}
    model = node_model(op, {"x": (F32, [seq, batch, size]), "w": (F32, [dirs, gates * h, size]),
                            "r": (F32, [dirs, gates * h, h]), "b": (F32, [dirs, 2 * gates * h])},
                       outputs, {"hidden_size": h, "direction": direction})
    feeds = random_feeds(model, low=0.05, high=0.5)
    check(model, feeds=feeds, rtol=1e-4, atol=1e-5)


def test_scatter_and_gather_nd():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    model = node_model("ScatterElements", {"x": (F32, [3, 4]), "i": ("int64", [2, 2]), "u": (F32, [2, 2])},
                       {"y": (F32, [3, 4])}, {"axis": 1, "reduction": "add"})
    check(model, feeds={"x": x, "i": np.array([[1, 1], [0, -1]], np.int64), "u": np.array([[5, 6], [7, 8]], np.float32)})
    model = node_model("ScatterND", {"x": (F32, [3, 4]), "i": ("int64", [2, 1]), "u": (F32, [2, 4])},
                       {"y": (F32, [3, 4])}, {"reduction": "mul"})
    check(model, feeds={"x": x, "i": np.array([[2], [0]], np.int64), "u": np.full((2, 4), 2, np.float32)})
    model = node_model("GatherND", {"x": (F32, [2, 3, 4]), "i": ("int64", [2, 1, 2])}, {"y": (F32, [2, 1])},
                       {"batch_dims": 1})
    check(model, feeds={"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
                        "i": np.array([[[1, 2]], [[2, -1]]], np.int64)})


@pytest.mark.parametrize("center,iou,floor", [(0, 0.5, None), (1, 0.3, 0.2), (0, 0.0, 0.5)])
def test_non_max_suppression_on_many_overlapping_boxes(center, iou, floor):
    # Hundreds of candidates per class, as a detection head gives, with degenerate (zero-area)
    # and flipped-corner boxes among them; scores are distinct so the order is well defined.
    rng = np.random.default_rng(7)
    n = 400
    xy = rng.uniform(0, 50, (2, n, 2))
    wh = rng.uniform(0, 12, (2, n, 2))
    wh[:, ::37] = 0.0
    if center:
        boxes = np.concatenate([xy, wh], axis=-1)
    else:
        boxes = np.concatenate([xy, xy + wh], axis=-1)
        boxes[:, ::5] = boxes[:, ::5][..., [2, 3, 0, 1]]
    scores = rng.permutation(2 * 3 * n).reshape(2, 3, n) / (2 * 3 * n)
    consts = {"max_output": np.array([150], np.int64), "iou_threshold": np.array([iou], np.float32)}
    if floor is not None:
        consts["score_threshold"] = np.array([floor], np.float32)
    model = node_model("NonMaxSuppression", {"boxes": (F32, [2, n, 4]), "scores": (F32, [2, 3, n])},
                       {"selected": ("int64", [None, 3])}, {"center_point_box": center}, consts)
    check(model, feeds={"boxes": boxes.astype(np.float32), "scores": scores.astype(np.float32)})


@pytest.mark.filterwarnings("error::RuntimeWarning")  # inf in the middle is IEEE, not a problem
@pytest.mark.parametrize("op,attrs", [("Sigmoid", {}), ("Softplus", {}), ("Mish", {}), ("Elu", {}),
                                      ("Selu", {}), ("HardSwish", {})])
def test_activations_at_extreme_inputs_match_without_warnings(op, attrs):
    model = node_model(op, {"x": (F32, [6])}, {"y": (F32, [6])}, attrs, opset=18)
    check(model, feeds={"x": np.array([-1e4, -100.0, -1.5, 0.0, 100.0, 1e4], np.float32)})


@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([1], 0), ([0, 1], 0), (None, 1)])
def test_log_sum_exp_of_large_and_very_negative_values(axes, keepdims):
    consts = {"axes": np.array(axes, np.int64)} if axes else {}
    model = node_model("ReduceLogSumExp", {"x": (F32, [3, 3])}, {"y": (F32, None)},
                       {"keepdims": keepdims}, consts, opset=18)
    x = np.array([[100.0, 100.0, 90.0], [-200.0, -300.0, -1e4], [0.5, -0.25, 1.0]], np.float32)
    check(model, feeds={"x": x})


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_ieee_specials_come_out_as_onnx_runtime_gives_them_without_warnings():
    # log(0) = -inf, log(-1) = nan, 1/0 = inf: T5's relative-position buckets compute such
    # values on a branch a Where then drops.
    specials = np.array([0.0, 1.0, -1.0, 4.0], np.float32)
    for op in ("Log", "Reciprocal", "Sqrt"):
        model = node_model(op, {"x": (F32, [4])}, {"y": (F32, [4])})
        check(model, feeds={"x": specials})
        # A constant input: folded on import rather than computed at run time.
        check(node_model(op, {}, {"y": (F32, [4])}, initializers={"x": specials}), feeds={})
