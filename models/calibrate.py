"""BatchNorm calibration: running statistics that match the random weights they follow.

With random weights, BatchNormalization's running mean/variance cannot come from training; if
they do not match the real statistics of their inputs, every mismatch multiplies through the
depth of a network (NASNet and ResNeXt-101 reach |x| ~ 1e4). So the statistics are measured: a
copy of the graph where every BatchNormalization normalizes with its batch's own statistics
(training-mode BN, written out with ReduceMean) runs once in ONNX Runtime on a seeded normal(0,1)
calibration batch (large enough for a few hundred samples per channel) and reports each BN's
input statistics, which become the running statistics: running_mean = CENTER x mean, and
running_var = E[(x - running_mean)^2]. Inference-mode BN then normalizes for real, as in a
trained network (see CENTER for why it is mostly the second moment).

The run is single-threaded and the statistics are rounded to 8 significant bits, so the same seed
gives byte-identical files.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from models.graph import Graph

# Statistics are measured over batch × height × width samples per channel: enough of them even
# where maps are small (7x7 heads, 1x1 maps of small inputs) keeps the estimate tight.
MIN_SAMPLES, MIN_BATCH, MAX_BATCH = 256, 2, 32
# Fraction of the measured mean that BN subtracts. Fully centered BN after ReLU makes a random
# network chaotic: every BN-ReLU layer amplifies relative perturbations (rounding differences) by
# pi/(pi-1) ~ 1.47 in variance, so Inception-v4 fp32 outputs moved by ~1e-3 between two ORT
# optimization levels — enough to fail an fp32 accuracy check for no fault of the compiler.
# Normalizing mostly by the second moment keeps the mean as signal (near the edge of chaos, like
# trained networks): the same comparison moves by ~2e-5.
CENTER = 0.2


def _round(values: np.ndarray, bits: int = 8) -> np.ndarray:
    """Keep ``bits`` significant bits: absorbs last-ulp differences between machines/threads."""
    mant, exp = np.frexp(values.astype(np.float64))
    return np.ldexp(np.round(mant * (1 << bits)) / (1 << bits), exp).astype(np.float32)


def _calibration_nodes(node: onnx.NodeProto, idx: int) -> tuple[list[onnx.NodeProto], str, str]:
    x, scale, bias = node.input[:3]
    eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
    p = f"__calib{idx}"
    mk = helper.make_node
    c = lambda name, arr: mk("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))  # noqa: E731
    nodes = [
        c(f"{p}_axes", np.array([1, 2], np.int64)),
        c(f"{p}_eps", np.float32(eps)),
        c(f"{p}_flat", np.array([-1], np.int64)),
        c(f"{p}_center", np.float32(CENTER)),
        mk("ReduceMean", [x], [f"{p}_fullmean4"], axes=[0, 2, 3], keepdims=1),
        mk("Mul", [f"{p}_fullmean4", f"{p}_center"], [f"{p}_mean4"]),
        mk("Sub", [x, f"{p}_mean4"], [f"{p}_d"]),
        mk("Mul", [f"{p}_d", f"{p}_d"], [f"{p}_d2"]),
        mk("ReduceMean", [f"{p}_d2"], [f"{p}_var4"], axes=[0, 2, 3], keepdims=1),
        mk("Add", [f"{p}_var4", f"{p}_eps"], [f"{p}_vareps"]),
        mk("Sqrt", [f"{p}_vareps"], [f"{p}_std"]),
        mk("Div", [f"{p}_d", f"{p}_std"], [f"{p}_norm"]),
        mk("Unsqueeze", [scale, f"{p}_axes"], [f"{p}_s"]),
        mk("Unsqueeze", [bias, f"{p}_axes"], [f"{p}_b"]),
        mk("Mul", [f"{p}_norm", f"{p}_s"], [f"{p}_scaled"]),
        mk("Add", [f"{p}_scaled", f"{p}_b"], [node.output[0]]),
        mk("Reshape", [f"{p}_mean4", f"{p}_flat"], [f"{p}_mean"]),
        mk("Reshape", [f"{p}_var4", f"{p}_flat"], [f"{p}_var"]),
    ]
    return nodes, f"{p}_mean", f"{p}_var"


def calibration_batch(graph: Graph, bns: list[onnx.NodeProto]) -> int:
    from models.stats import bind_batch, value_shapes
    shapes = value_shapes(bind_batch(graph.shape_only_model(), 1))
    areas = [int(np.prod(shapes[n.input[0]][2:])) for n in bns if shapes.get(n.input[0])]
    smallest = min(areas) if areas else 1
    return int(np.clip(-(-MIN_SAMPLES // max(smallest, 1)), MIN_BATCH, MAX_BATCH))


def calibrate_batchnorm(graph: Graph, seed: int, batch: int | None = None) -> int:
    """Set every BatchNormalization's running statistics in ``graph``; returns how many."""
    import onnxruntime as ort

    bns = [n for n in graph.nodes if n.op_type == "BatchNormalization"]
    if not bns:
        return 0
    batch = batch or calibration_batch(graph, bns)
    nodes, stat_outputs = [], []
    for node in graph.nodes:
        if node.op_type == "BatchNormalization":
            new, mean, var = _calibration_nodes(node, len(stat_outputs))
            nodes.extend(new)
            stat_outputs.append((node, mean, var))
        else:
            nodes.append(node)
    inits = [numpy_helper.from_array(graph.weight(name, seed), name) for name in graph.weights]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
               for _, mean, var in stat_outputs for name in (mean, var)]
    model = helper.make_model(helper.make_graph(nodes, "calibration", graph.inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    rng = np.random.default_rng([seed, 0xCA11B])
    feeds = {}
    for vi in graph.inputs:
        if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
            raise ValueError(f"BatchNorm calibration supports float inputs only ({vi.name})")
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape, dtype=np.float32)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    values = session.run(None, feeds)
    for i, (node, _, _) in enumerate(stat_outputs):
        graph.fixed[node.input[3]] = _round(values[2 * i])
        var = values[2 * i + 1]
        # Channels that were (nearly) constant on the calibration batch — dead ReLUs, 1x1 maps
        # of small inputs — would divide later inputs by ~sqrt(eps); floor them at a quarter of
        # the layer's median variance.
        floor = max(float(np.median(var)) * 0.25, 1e-6)
        graph.fixed[node.input[4]] = _round(np.maximum(var, floor))
    return len(stat_outputs)
