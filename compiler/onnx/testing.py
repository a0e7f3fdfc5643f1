"""Small ONNX models for tests and checks: one node (or a few) with seeded non-zero inputs, run
through the compiler and through ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .types import onnx_elem_type


def node_model(op_type: str, inputs: dict, outputs: dict, attrs: dict | None = None,
               initializers: dict | None = None, opset: int = 18, extra_nodes=()) -> onnx.ModelProto:
    """A one-node model. ``inputs``/``outputs`` map names to ``(dtype, shape)``;
    ``initializers`` map names (also listed as node inputs) to arrays. A name "" in the node's
    input list stands for an omitted optional input: pass ``node_inputs`` through ``attrs``
    key ``"_inputs"`` to order them explicitly."""
    attrs = dict(attrs or {})
    initializers = dict(initializers or {})
    node_inputs = attrs.pop("_inputs", list(inputs) + list(initializers))
    node = helper.make_node(op_type, node_inputs, list(outputs), **attrs)
    graph = helper.make_graph(
        [*extra_nodes, node], f"{op_type.lower()}_test",
        [helper.make_tensor_value_info(n, onnx_elem_type(d), s) for n, (d, s) in inputs.items()],
        [helper.make_tensor_value_info(n, onnx_elem_type(d), s) for n, (d, s) in outputs.items()],
        initializer=[numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    return model_of(graph, opset)


def model_of(graph: onnx.GraphProto, opset: int = 18) -> onnx.ModelProto:
    """``graph`` as a model of the default domain's ``opset``, at an IR version that goes with
    it rather than the onnx package's newest (which an older ONNX Runtime refuses: IR 14 against
    a runtime reading up to 13 on the GPU machine)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    return model


def random_feeds(model: onnx.ModelProto, seed: int = 0, low: float = 0.1, high: float = 2.0) -> dict:
    """Non-zero inputs of either sign (magnitudes in [low, high)) for every graph input."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in inits:
            continue
        t = value.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = [d.dim_value for d in t.shape.dim]
        if dtype == np.bool_:
            feeds[value.name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(1, 5, shape).astype(dtype)
        else:
            magnitude = rng.uniform(low, high, shape)
            feeds[value.name] = (magnitude * rng.choice([-1.0, 1.0], shape)).astype(dtype)
    return feeds


def run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_compiler(model: onnx.ModelProto, feeds: dict, target: str = "ref") -> list:
    from .parser import parse_onnx
    program = parse_onnx(model)
    program.compile(target)
    return program.run(feeds)
