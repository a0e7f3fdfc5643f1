"""What an op's ``from_onnx`` hook sees of an ONNX node: decoded attributes, the instructions of
its inputs (None for an omitted optional input) and a way to build its subgraphs."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from compiler.errors import ModelLoadError, UnsupportedOperatorError
from compiler.ir.instruction import LITERAL, Instruction


class OnnxNode:
    def __init__(self, proto, attrs: dict, inputs: Sequence[Instruction | None], opset: int,
                 build_subgraph: Callable | None = None, build_stand_in: Callable | None = None):
        self.proto = proto
        self.op_type: str = proto.op_type
        self.name: str = proto.name
        self.domain: str = proto.domain
        self.opset = opset
        self.attrs = {k: v for k, v in attrs.items() if not _is_graph(v)}
        self.graphs = {k: v for k, v in attrs.items() if _is_graph(v)}
        self.inputs = list(inputs)
        self.outputs = [o for o in proto.output]
        # (node, graph, param_shapes) -> submodule, bound by the importer to the node's module
        # and scope, which the subgraph's outer reads resolve against.
        self._build_subgraph = build_subgraph
        self._build_stand_in = build_stand_in

    # ----- inputs -----------------------------------------------------------------------------
    def input(self, i: int) -> Instruction | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def literal(self, i: int) -> np.ndarray | None:
        ins = self.input(i)
        return ins.value if ins is not None and ins.op == LITERAL else None

    def present_inputs(self) -> list[Instruction]:
        """All inputs, which must have no gaps (an omitted input followed by a given one)."""
        inputs = list(self.inputs)
        while inputs and inputs[-1] is None:
            inputs.pop()
        if any(i is None for i in inputs):
            self.unsupported(f"omitted optional input {inputs.index(None)} before a given one")
        return inputs

    # ----- outputs ----------------------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        """Number of outputs up to the last one that is used (named)."""
        names = list(self.outputs)
        while names and not names[-1]:
            names.pop()
        return len(names)

    # ----- subgraphs and errors ---------------------------------------------------------------
    def subgraph(self, attr: str, param_shapes: Sequence | None = None):
        """Build the graph attribute ``attr`` as a submodule (its inputs become parameters, with
        ``param_shapes`` where the graph leaves them open); outer values are read directly."""
        return self._build_subgraph(self, self.graphs[attr], param_shapes)

    def stand_in_subgraph(self, attr: str, reason: str, shapes: Sequence):
        """A submodule for the graph attribute ``attr`` that could not be built for the shapes
        being compiled: it gives results of ``shapes``, and running it raises ``reason``."""
        return self._build_stand_in(self, attr, reason, shapes)

    def unsupported(self, detail: str = ""):
        raise UnsupportedOperatorError(self.op_type, self.name, self.domain, self.opset, detail)


class RunTimeValueNeeded(ModelLoadError):
    """The program cannot be built before an input's value is known (the rank of a result
    depends on it): bind that input to a constant first."""


def check_input_count(proto, opset: int, inputs: Sequence) -> None:
    """A node with fewer required inputs (or more inputs) than its ONNX schema allows is a
    malformed model: say so here, instead of failing inside the operator when it runs."""
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain or "")
    except onnx.defs.SchemaError:
        return  # not an operator ONNX defines: its own import checks its inputs
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    formal = list(schema.inputs)
    # Only a required (non-optional, non-variadic) parameter must be given and non-empty.
    missing = [i for i, param in enumerate(formal[:schema.min_input])
               if param.option == single and (i >= len(inputs) or inputs[i] is None)]
    if missing or len(inputs) > schema.max_input:
        label = f"{proto.name!r} ({proto.op_type})" if proto.name else repr(proto.op_type)
        wanted = (f"{schema.min_input}" if schema.min_input == schema.max_input
                  else f"at least {schema.min_input}" if schema.max_input > 1000
                  else f"{schema.min_input} to {schema.max_input}")
        raise ModelLoadError(f"node {label}: {proto.op_type} (opset {opset}) takes {wanted} input(s), "
                             f"the model gives {sum(i is not None for i in inputs)}; "
                             "the model is malformed")


def check_attributes(proto, opset: int) -> None:
    """An attribute the operator's ONNX schema does not define is a malformed model (ONNX
    Runtime refuses it too): say which, rather than compile something the model did not mean."""
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain or "")
    except onnx.defs.SchemaError:
        return  # not an operator ONNX defines: its own import checks its attributes
    unknown = sorted(a.name for a in proto.attribute if a.name not in schema.attributes)
    if unknown:
        label = f"{proto.name!r} ({proto.op_type})" if proto.name else repr(proto.op_type)
        known = ", ".join(sorted(schema.attributes)) or "none"
        raise ModelLoadError(f"node {label}: unknown attribute(s) {', '.join(map(repr, unknown))} for "
                             f"{proto.op_type} (opset {opset}; its attributes: {known})")


def _is_graph(value) -> bool:
    return type(value).__name__ == "GraphProto"
