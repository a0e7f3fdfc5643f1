"""ONNX sequence values, resolved at import time.

The IR has tensors only. Exporters use sequences in two shapes that reduce to tensors:

* straight-line: ``SplitToSequence`` / ``SequenceConstruct`` / ``SequenceInsert`` feeding
  ``SequenceAt`` or ``ConcatFromSequence`` (PyTorch's dynamo exporter unoptimised:
  ``torch.split``, ``torch.chunk``; scripted code indexing a list in a loop). The parser keeps
  such a sequence as a list of the value names of its elements (``SequenceValue``) and builds
  each consumer from tensor ops (a run-time position: stack the elements and gather).
* accumulated in a ``Loop``: an empty sequence carried through the loop, one element appended
  per iteration, concatenated or stacked afterwards (the dynamo exporter's ``EmbeddingBag``
  with offsets, scripted loops that append to a list). ``loops_to_scan_outputs`` rewrites that
  carried value into a scan output before import.

Sequences whose length is only known at run time and that are not of the second form (or that
are graph inputs or outputs) remain unsupported, with an error naming the node.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from compiler.ir.instruction import LITERAL
from compiler.ops.common import scalar_int

from .load import all_nodes

SEQUENCE_OPS = frozenset({"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt",
                          "SequenceErase", "SequenceLength", "SplitToSequence",
                          "ConcatFromSequence"})


class SequenceValue(list):
    """A sequence known at import time: the scope names of its elements, in order."""


# ----- straight-line sequences (called by the parser with the node's scope) -------------------
class SequenceBuilder:
    """Turns one sequence node into scope entries; ``importer`` is the ``GraphImporter`` (its
    ``_add_node`` builds the tensor ops that a sequence node stands for)."""

    def __init__(self, importer, proto, module, scope, unsupported):
        self.importer, self.proto, self.module, self.scope = importer, proto, module, scope
        self.unsupported = unsupported
        self.attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}

    def build(self) -> None:
        getattr(self, "_" + self.proto.op_type)()

    # inputs
    def _seq(self, i: int) -> SequenceValue:
        value = self.scope.lookup(self.proto.input[i])
        if not isinstance(value, SequenceValue):
            self.unsupported(f"input {i} is not a sequence built at import time")
        return value

    def _int(self, i: int, default: int | None = None) -> int | None:
        if i >= len(self.proto.input) or not self.proto.input[i]:
            return default
        ins = self.scope.lookup(self.proto.input[i])
        if isinstance(ins, SequenceValue) or ins is None or ins.op != LITERAL:
            self.unsupported(f"input {i} (a position or size) is only known at run time")
        return scalar_int(ins.value)

    def _set(self, value) -> None:
        self.scope[self.proto.output[0]] = value

    def _emit(self, op_type: str, inputs: list[str], n_out: int = 1, **attrs) -> list[str]:
        """Build a tensor node through the importer; returns its output names."""
        base = f"{self.proto.output[0]}::{op_type}{len(self.scope)}"
        outs = [f"{base}:{k}" for k in range(n_out)]
        node = helper.make_node(op_type, inputs, outs, name=f"{self.proto.name}/{op_type}", **attrs)
        self.importer._add_node(node, self.module, self.scope)
        return outs

    def _literal(self, value) -> str:
        name = f"{self.proto.output[0]}::const{len(self.scope)}"
        self.scope[name] = self.module.add_literal(np.asarray(value), name=name)
        return name

    # ops
    def _SequenceEmpty(self):
        self._set(SequenceValue())

    def _SequenceConstruct(self):
        self._set(SequenceValue(self.proto.input))

    def _SequenceLength(self):
        if self.proto.input[0].endswith(STACKED):  # a loop's elements, stacked
            count = self._emit("Shape", [self.proto.input[0]], start=0, end=1)[0]
            scalar = self._emit("Reshape", [count, self._literal(np.array([], np.int64))])[0]
            self._set(self.scope.lookup(scalar))
            return
        self._set(self.module.add_literal(np.array(len(self._seq(0)), dtype=np.int64), name=self.proto.output[0]))

    def _SequenceInsert(self):
        seq = self._seq(0)
        pos = self._int(2, len(seq))
        pos = pos + len(seq) if pos < 0 else pos
        if not 0 <= pos <= len(seq):
            self.unsupported(f"position {pos} outside a sequence of {len(seq)}")
        self._set(SequenceValue(seq[:pos] + [self.proto.input[1]] + seq[pos:]))

    def _SequenceErase(self):
        seq = self._seq(0)
        pos = self._int(1, -1)
        pos = pos + len(seq) if pos < 0 else pos
        if not 0 <= pos < len(seq):
            self.unsupported(f"position {pos} outside a sequence of {len(seq)}")
        self._set(SequenceValue(seq[:pos] + seq[pos + 1:]))

    def _SequenceAt(self):
        if self.proto.input[0].endswith(STACKED):  # a loop's elements, stacked
            self._set(self._gather(self.proto.input[0]))
            return
        seq = self._seq(0)
        ins = self.scope.lookup(self.proto.input[1])
        if ins is not None and not isinstance(ins, SequenceValue) and ins.op != LITERAL:
            self._at_run_time(seq)
            return
        pos = self._int(1)
        pos = pos + len(seq) if pos < 0 else pos
        if not 0 <= pos < len(seq):
            self.unsupported(f"position {pos} outside a sequence of {len(seq)}")
        self._set(self.scope.lookup(seq[pos]))

    def _at_run_time(self, seq: SequenceValue):
        """An element picked by a run-time position (a scripted loop indexing a list): the
        elements stacked, then gathered; they must all have one shape."""
        shapes = {tuple(self.scope.lookup(n).shape.lens) for n in seq}
        dtypes = {self.scope.lookup(n).shape.dtype for n in seq}
        if not seq or len(shapes) != 1 or None in next(iter(shapes)) or len(dtypes) != 1:
            self.unsupported("a run-time position into a sequence of unequal or unknown shapes")
        axes = self._literal(np.array([0], np.int64))
        parts = [self._emit("Unsqueeze", [n, axes])[0] for n in seq]
        stacked = self._emit("Concat", parts, axis=0)[0] if len(parts) > 1 else parts[0]
        self._set(self._gather(stacked))

    def _gather(self, stacked: str):
        """Element ``input[1]`` (a run-time position, negative from the end) of ``stacked``."""
        pos = self._emit("Reshape", [self.proto.input[1], self._literal(np.array([], np.int64))])[0]
        return self.scope.lookup(self._emit("Gather", [stacked, pos], axis=0)[0])

    def _SplitToSequence(self):
        x = self.scope.lookup(self.proto.input[0])
        axis = int(self.attrs.get("axis", 0))
        axis = axis + x.shape.ndim if axis < 0 else axis
        length = x.shape.lens[axis]
        has_split = len(self.proto.input) > 1 and self.proto.input[1]
        if has_split:
            split = self.scope.lookup(self.proto.input[1])
            if split is None or split.op != LITERAL:
                self.unsupported("split sizes only known at run time")
            sizes = np.asarray(split.value).astype(np.int64)
            if sizes.ndim == 0:  # one chunk size: equal chunks, the last one shorter
                if length is None:
                    self.unsupported("splitting a run-time length")
                step = int(sizes)
                sizes = np.array([min(step, length - s) for s in range(0, length, step)], np.int64)
        else:
            if length is None:
                self.unsupported("splitting a run-time length")
            sizes = np.ones(length, np.int64)
        parts = self._emit("Split", [self.proto.input[0], self._literal(sizes)], len(sizes),
                           axis=axis)
        if not has_split and not int(self.attrs.get("keepdims", 1)):
            axes = self._literal(np.array([axis], np.int64))
            parts = [self._emit("Squeeze", [p, axes])[0] for p in parts]
        self._set(SequenceValue(parts))

    def _ConcatFromSequence(self):
        if self.proto.input[0].endswith(STACKED):
            self._concat_stacked()
            return
        seq = self._seq(0)
        if not seq:
            self.unsupported("concatenating an empty sequence")
        axis = int(self.attrs["axis"])
        parts = list(seq)
        if int(self.attrs.get("new_axis", 0)):
            axes = self._literal(np.array([axis], np.int64))
            parts = [self._emit("Unsqueeze", [p, axes])[0] for p in parts]
        out = self._emit("Concat", parts, axis=axis)[0]
        self._set(self.scope.lookup(out))

    def _concat_stacked(self):
        """The concatenation of a loop's elements, given stacked on a new first axis
        (``loops_to_scan_outputs``): that axis moved to ``axis``, merged with the element
        axis there unless ``new_axis``."""
        stacked = self.proto.input[0]
        rank = self.scope.lookup(stacked).shape.ndim - 1  # of one element
        new_axis = bool(int(self.attrs.get("new_axis", 0)))
        axis = int(self.attrs["axis"])
        axis = axis + rank + int(new_axis) if axis < 0 else axis
        if not 0 <= axis < rank + int(new_axis):
            self.unsupported(f"axis {axis} outside elements of rank {rank}")
        moved = stacked
        if axis:
            perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank + 1))
            moved = self._emit("Transpose", [stacked], perm=perm)[0]
        if not new_axis:
            head = self._emit("Shape", [moved], end=axis)[0] if axis else None
            tail = self._emit("Shape", [moved], start=axis + 2)[0]
            parts = ([head] if head else []) + [self._literal(np.array([-1], np.int64)), tail]
            moved = self._emit("Reshape", [moved, self._emit("Concat", parts, axis=0)[0]])[0]
        self._set(self.scope.lookup(moved))


# ----- sequences accumulated in loops ---------------------------------------------------------
STACKED = "::stacked"  # suffix of the stacked scan output that stands for a loop's sequence
STACK_READERS = ("ConcatFromSequence", "SequenceAt", "SequenceLength")


def loops_to_scan_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite ``Loop`` carried sequences that start empty, grow by one appended tensor per
    iteration and are read only by ``ConcatFromSequence`` into scan outputs (the elements
    stacked on a new first axis, named ``<sequence>::stacked``), which those readers (and
    ``SequenceAt``, ``SequenceLength``) then read instead; in the main graph and in every
    subgraph. Returns the model (a rewritten copy when it has such loops)."""
    if not any(n.op_type == "SequenceEmpty" for n in all_nodes(model.graph)):
        return model
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _rewrite_graph(model.graph)
    return model


def _rewrite_graph(graph) -> None:
    for node in graph.node:
        for sub in subgraphs(node):
            _rewrite_graph(sub)
    empties = {n.output[0] for n in graph.node if n.op_type == "SequenceEmpty"}
    if not empties:
        return
    for node in graph.node:
        if node.op_type == "Loop":
            for k in reversed(range(len(node.input) - 2)):
                if node.input[2 + k] in empties:
                    _carried_to_scan(node, k, graph.node)
    outputs = {o.name for o in graph.output}
    keep = [n for n in graph.node if not (
        n.op_type == "SequenceEmpty" and n.output[0] not in outputs
        and not any(_reads(other, n.output[0]) for other in graph.node))]
    del graph.node[:]
    graph.node.extend(keep)


def subgraphs(node) -> list:
    """The graphs of ``node``'s attributes (an If's branches, a Loop's or Scan's body)."""
    graphs = [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return graphs + [g for a in node.attribute if a.type == onnx.AttributeProto.GRAPHS
                     for g in a.graphs]


def _carried_to_scan(loop, k: int, graph_nodes) -> None:
    """Turn carried value ``k`` of ``loop`` into a scan output when it has the append-only form
    and only ``STACK_READERS`` read its final value; those then read the stack."""
    body = next(a.g for a in loop.attribute if a.name == "body")
    n_carried = len(loop.input) - 2
    n_scans = len(body.output) - 1 - n_carried
    param = body.input[2 + k].name
    result = body.output[1 + k].name
    appends = [n for n in body.node if n.op_type == "SequenceInsert" and n.output[0] == result]
    if len(appends) != 1 or len(appends[0].input) > 2 or appends[0].input[0] != param:
        return
    if [n for n in body.node if _reads(n, param)] != [appends[0]] or \
            any(_reads(n, result) for n in body.node):
        return
    seq_out = loop.output[k] if k < len(loop.output) else ""
    readers = [n for n in graph_nodes if seq_out and seq_out in n.input]
    if not readers or any(n.op_type not in STACK_READERS for n in readers):
        return
    # body: drop the carried parameter and result, add the appended tensor as a scan output
    element = appends[0].input[1]
    body.node.remove(appends[0])
    body.input.pop(2 + k)
    body.output.pop(1 + k)
    body.output.append(helper.make_value_info(element, onnx.TypeProto()))
    # loop: drop the carried input and its final value, add the stacked output last
    stacked = seq_out + STACKED
    outputs = list(loop.output) + [""] * (n_carried + n_scans - len(loop.output))
    outputs.pop(k)
    outputs.append(stacked)
    loop.input.pop(2 + k)
    del loop.output[:]
    loop.output.extend(outputs)
    for reader in readers:
        reader.input[0] = stacked


def _reads(node, name: str) -> bool:
    """Whether ``node`` reads ``name``, itself or in one of its subgraphs."""
    return name in node.input or any(_reads(n, name) for g in subgraphs(node) for n in g.node)
