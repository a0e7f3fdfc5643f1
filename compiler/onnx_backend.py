"""An ``onnx.backend.base.Backend`` over the compiler, so onnx's own test cases (and anything
else speaking the backend API) can run models on our targets.

    from compiler.onnx_backend import PerfbotBackend
    rep = PerfbotBackend.prepare(model, device="CPU", target="ref")
    outputs = rep.run([x])

The target is the ``target`` option, else the ``PERFBOT_BACKEND_TARGET`` environment variable,
else ``ref``. A model whose result *rank* depends on an input's values (a Reshape whose shape is
a graph input, say) cannot be compiled before its inputs are known; such a model is compiled
again at each run with its integer and boolean inputs bound as constants.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from compiler.onnx.node import RunTimeValueNeeded
from compiler.onnx.parser import parse_onnx

TARGET_ENV = "PERFBOT_BACKEND_TARGET"
DEVICES = {"ref": ("CPU",), "cpu": ("CPU",), "gpu": ("CUDA",)}


def default_target() -> str:
    return os.environ.get(TARGET_ENV, "ref")


def _compile(model, target: str, options: dict):
    program = parse_onnx(model, batch_size=options.get("batch_size"))
    program.compile(target)
    return program


class PerfbotRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, target: str, options: dict):
        self.model = model
        self.target = target
        self.options = options
        init_names = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in init_names]
        try:
            self.program = _compile(model, target, options)
        except RunTimeValueNeeded:
            self.program = None  # specialise on the inputs' values at each run

    def run(self, inputs: Any, **kwargs) -> tuple:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        program = self.program or self._specialise(feeds)
        outputs = program.run({n: feeds[n] for n in program.main.parameter_names() if n in feeds})
        return tuple(np.asarray(o) for o in outputs)

    def _specialise(self, feeds: dict):
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        graph = model.graph
        bound = {n for n, v in feeds.items() if np.asarray(v).dtype.kind in "biu"}
        for name in bound:
            graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(feeds[name]), name))
        return _compile(model, self.target, self.options)


class PerfbotBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", target: str | None = None,
                **kwargs) -> PerfbotRep:
        super().prepare(model, device, **kwargs)
        target = target or default_target()
        return PerfbotRep(model, target, kwargs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info=None, **kwargs) -> tuple:
        """Run one node by wrapping it in a model whose output types come from shape inference."""
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        graph_inputs = [onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(
            np.asarray(x).dtype), np.asarray(x).shape) for name, x in zip(node.input, inputs) if name]
        graph_outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = onnx.helper.make_graph([node], "run_node", graph_inputs, graph_outputs)
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        model = onnx.shape_inference.infer_shapes(model)
        feeds = [x for name, x in zip(node.input, inputs) if name]
        return cls.run_model(model, feeds, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        kind = Device(device).type
        names = DEVICES.get(default_target(), ("CPU",))
        return any(kind == getattr(DeviceType, n) for n in names)


prepare = PerfbotBackend.prepare
run_model = PerfbotBackend.run_model
run_node = PerfbotBackend.run_node
supports_device = PerfbotBackend.supports_device
