"""Parameter counts and FLOPs of an ONNX model, from its graph alone.

Parameters: elements of floating-point initializers, except the running mean/variance inputs of
BatchNormalization (buffers, not learned weights; published counts leave them out too). Fixed
tables and scalars that exporters emit as Constant nodes are not parameters either.

FLOPs: 2 × multiply-accumulates of Conv, ConvTranspose, MatMul, Gemm, Einsum, LSTM, GRU and RNN at
batch 1 (element-wise work is ignored, as in published GFLOP figures).

Minimum bytes: what one inference must move at least (weights, graph inputs and outputs, each
once; intermediates are left out, since a fusing compiler need not write them): the memory side
of a roofline bound.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, shape_inference

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}


def count_parameters(model: onnx.ModelProto) -> int:
    """Count parameters by the rule above; works on a model loaded without external data."""
    buffers = {n.input[i] for n in model.graph.node if n.op_type == "BatchNormalization"
               for i in (3, 4) if len(n.input) > i}
    return sum(int(np.prod(t.dims, dtype=np.int64)) for t in model.graph.initializer
               if t.data_type in FLOAT_TYPES and t.name not in buffers)


def bind_batch(model: onnx.ModelProto, batch: int = 1) -> onnx.ModelProto:
    """A copy whose symbolic ``batch`` dimensions are fixed, so shape inference yields numbers."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for vi in list(model.graph.input) + list(model.graph.output):
        for dim in vi.type.tensor_type.shape.dim:
            if dim.dim_param == "batch":
                dim.Clear()
                dim.dim_value = batch
    return model


def value_shapes(model: onnx.ModelProto) -> dict[str, list[int | None]]:
    """Every value's lengths after ONNX shape inference (None where a length is not known)."""
    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for t in inferred.graph.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


def _prod(dims) -> int:
    return int(np.prod(list(dims), dtype=np.int64))


def _einsum_labels(term: str, rank: int) -> list[str]:
    """One Einsum operand's index labels, ``...`` expanded to one label per dimension it covers
    (counted from its right end, so the ellipses of operands of different ranks line up)."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    covered = rank - len(head) - len(tail)
    return list(head) + [f"...{covered - i}" for i in range(covered)] + list(tail)


def _node_flops(node: onnx.NodeProto, shapes: dict) -> int:
    get = shapes.get
    op = node.op_type
    if op == "Conv":
        out, w = get(node.output[0]), get(node.input[1])
        return 2 * _prod(out) * _prod(w[1:])
    if op == "ConvTranspose":
        x, w = get(node.input[0]), get(node.input[1])
        return 2 * _prod(x) * _prod(w[1:])
    if op == "MatMul":
        a, out = get(node.input[0]), get(node.output[0])
        return 2 * _prod(out) * a[-1]
    if op == "Gemm":
        a, out = get(node.input[0]), get(node.output[0])
        trans_a = next((at.i for at in node.attribute if at.name == "transA"), 0)
        return 2 * _prod(out) * (a[0] if trans_a else a[1])
    if op == "Einsum":
        eq = next(at.s.decode() for at in node.attribute if at.name == "equation").replace(" ", "")
        terms = eq.split("->")[0].split(",")
        if len(terms) < 2:
            return 0            # a transpose or a sum: data movement
        sizes = {}
        for term, name in zip(terms, node.input):
            dims = get(name)
            for label, d in zip(_einsum_labels(term, len(dims)), dims):
                sizes[label] = max(sizes.get(label, 1), d)
        return 2 * (len(terms) - 1) * _prod(sizes.values())
    if op in ("LSTM", "GRU", "RNN"):
        x, w, r = get(node.input[0]), get(node.input[1]), get(node.input[2])
        return 2 * x[0] * x[1] * (_prod(w) + _prod(r))
    return 0


def count_flops(model: onnx.ModelProto) -> int:
    """FLOPs of one inference (batch 1); needs no weights, only shapes."""
    model = bind_batch(model, 1)
    shapes = value_shapes(model)
    total = 0
    for node in model.graph.node:
        try:
            total += _node_flops(node, shapes)
        except (TypeError, IndexError):
            # An unknown dimension (dynamic shape): the op is left out rather than guessed.
            continue
    return total


def _itemsize(elem_type: int) -> int:
    from onnx import helper
    return helper.tensor_dtype_to_np_dtype(elem_type).itemsize


def minimum_bytes(model: onnx.ModelProto, batch: int = 1, fp16: bool = False, weights=()) -> int:
    """Bytes of the weights, graph inputs and outputs at ``batch``; needs no weights, only shapes
    (``weights`` names graph inputs that are weights, as a shape-only model declares them). A table
    read only through Gather (an embedding) counts the rows gathered, not the table; fp32 weights
    count 2 bytes in fp16 mode (stored in half precision there; inputs and outputs keep their
    types, cast at the program's edges)."""
    model = bind_batch(model, batch)
    shapes = value_shapes(model)
    readers: dict = {}
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, i))
    tensors = [(t.name, t.data_type, list(t.dims)) for t in model.graph.initializer]
    named = set(weights)
    tensors += [(vi.name, vi.type.tensor_type.elem_type, shapes.get(vi.name)) for vi in model.graph.input
                if vi.name in named]
    total = 0
    for name, elem_type, dims in tensors:
        item = 2 if fp16 and elem_type == TensorProto.FLOAT else _itemsize(elem_type)
        gathers = [n for n, i in readers.get(name, []) if n.op_type == "Gather" and i == 0]
        rows = [shapes.get(n.output[0]) for n in gathers]
        if gathers and len(gathers) == len(readers[name]) and all(r and None not in r for r in rows):
            total += item * sum(_prod(r) for r in rows)
        else:
            total += item * _prod(dims)
    counted = {name for name, _t, _d in tensors}
    for vi in list(model.graph.input) + list(model.graph.output):
        dims = shapes.get(vi.name)
        if vi.name not in counted and dims and None not in dims:
            total += _itemsize(vi.type.tensor_type.elem_type) * _prod(dims)
    return total
