"""What an expansion writes with: standard nodes in the expansion domain, at its opset, under
fresh value names, ending in the replaced node's own output names."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

# Expansions are written at this opset of the standard operators, in a domain of their own, so
# that a model at any opset can take them (LayerNormalization is opset 17, RMSNormalization 23).
EXPANSION_DOMAIN = "perfbot.expanded"
EXPANSION_OPSET = 23


class Unexpandable(Exception):
    """A form of a contrib operator that is not expanded: the node stays, and the import reports
    it as unsupported."""


class Builder:
    def __init__(self, node: onnx.NodeProto, taken: set[str], rank=lambda name: None):
        self.node, self.taken, self.nodes = node, taken, []
        self.rank = rank  # a value's rank where the model declares it (``ranks.Ranks``), else None
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self._count = 0

    # ----- the replaced node ------------------------------------------------------------------
    def input(self, k: int) -> str:
        """The node's input ``k``, '' when absent."""
        return self.node.input[k] if k < len(self.node.input) else ""

    def output(self, k: int) -> str:
        """The node's output ``k``, '' when absent or unused."""
        return self.node.output[k] if k < len(self.node.output) else ""

    def attr(self, name: str, default=None):
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def refuse_outputs(self, *indices: int, why: str) -> None:
        """The node's outputs ``indices`` are not expanded: refuse the node if it has them."""
        if any(self.output(k) for k in indices):
            raise Unexpandable(why)

    # ----- writing ----------------------------------------------------------------------------
    def fresh(self) -> str:
        while True:
            self._count += 1
            name = f"{self.node.name or self.node.output[0]}__expanded_{self._count}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def op(self, op_type: str, inputs: list[str], out: str | list[str] | None = None, outputs: int = 1,
           **attrs):
        """Append a standard node and return its (first) output's name. ``out``: the replaced
        node's output name to write, or for ``outputs`` > 1 a list of them, '' for an output
        nobody reads (trailing ones are left off, a first one gets a fresh name)."""
        if outputs == 1:
            names = [out or self.fresh()]
        else:
            names = list(out or [""] * outputs)
            while len(names) > 1 and not names[-1]:
                names.pop()
            names[0] = names[0] or self.fresh()
        self.nodes.append(helper.make_node(op_type, inputs, names, name=f"{names[0]}_{op_type}",
                                           domain=EXPANSION_DOMAIN, **attrs))
        return names[0]

    def const(self, value, dtype=None) -> str:
        array = np.asarray(value, dtype=dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(array, self.fresh()))

    def like(self, value: float, x: str) -> str:
        """A float constant in ``x``'s element type (fp16 models take fp16 constants)."""
        return self.op("CastLike", [self.const(value, "float32"), x])

    def ints(self, values) -> str:
        return self.const(np.asarray(values, np.int64))
