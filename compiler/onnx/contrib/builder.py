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

    def dim(self, name: str, axis: int) -> int | None:
        """The length of value ``name``'s ``axis`` where the model gives it as a number, else None
        (an attribute an expansion writes must be a number, not a value computed on import)."""
        dim = getattr(self.rank, "dim", None)
        return dim(name, axis) if dim else None

    def elem_type(self, name: str) -> int | None:
        """Value ``name``'s element type (an onnx.TensorProto code) where the model gives it."""
        known = getattr(self.rank, "elem_type", None)
        return known(name) if known else None

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

    def op(self, op_type: str, inputs: list[str], out: str | list[str] | None = None, **attrs) -> str:
        """Append a standard node and return its (first) output's name. ``out``: the replaced
        node's output name to write, else a fresh one; a list for several outputs, '' for one
        nobody reads (trailing ones are left off, a first one gets a fresh name)."""
        names = list(out) if isinstance(out, list) else [out or ""]
        while len(names) > 1 and not names[-1]:
            names.pop()
        names[0] = names[0] or self.fresh()
        self.nodes.append(helper.make_node(op_type, inputs, names, name=f"{names[0]}_{op_type}",
                                           domain=EXPANSION_DOMAIN, **attrs))
        return names[0]

    def plus(self, x: str, addend: str) -> str:
        """x + addend, or x when the addend (an optional input) is absent."""
        return self.op("Add", [x, addend]) if addend else x

    def rename(self, value: str, name: str) -> str:
        """``value``, written by this expansion, renamed ``name`` (a replaced node's output) in
        every node written so far; ``value`` itself when ``name`` is '' (an output nobody reads)."""
        if not name:
            return value
        for node in self.nodes:
            for field in (node.input, node.output):
                renamed = [name if v == value else v for v in field]
                del field[:]
                field.extend(renamed)
        return name

    def const(self, value, dtype=None) -> str:
        array = np.asarray(value, dtype=dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(array, self.fresh()))

    def like(self, value: float, x: str) -> str:
        """A float constant in ``x``'s element type (fp16 models take fp16 constants)."""
        return self.op("CastLike", [self.const(value, "float32"), x])

    def ints(self, values) -> str:
        return self.const(np.asarray(values, np.int64))

    def filled(self, shape: str, value) -> str:
        """A tensor of shape ``shape`` (a 1-D int64 value) holding ``value`` (a NumPy scalar, whose
        type it takes) everywhere."""
        return self.op("ConstantOfShape", [shape], value=numpy_helper.from_array(np.asarray(value).reshape(1)))

    def length(self, x: str, axis: int) -> str:
        """The length of ``x``'s ``axis``, a scalar; shapes are known on import, so it folds there."""
        return self.op("Gather", [self.op("Shape", [x]), self.ints(axis)], axis=0)


def present(names: list[str]) -> list[str]:
    """Node inputs without the absent ('') ones at the end (an absent one before a given one
    stays, as ONNX writes it)."""
    names = list(names)
    while names and not names[-1]:
        names.pop()
    return names
