"""The rank of a value where the model says it (declared or inferred types, initializers), for the
expansions that depend on it (an Attention's mask index)."""
from __future__ import annotations

import onnx

from ..load import subgraphs

# Ops whose first output has their first input's rank.
SAME_RANK = frozenset({"Cast", "Identity", "Not", "Abs", "Neg"})
# Contrib outputs of a known rank: (op_type, output index) -> rank.
CONTRIB_RANKS = {("EmbedLayerNormalization", 1): 1}


class Ranks:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self._ranks: dict[str, int] | None = None
        self._dims: dict[str, tuple] = {}
        self._types: dict[str, int] = {}

    def __call__(self, name: str) -> int | None:
        if self._ranks is None:
            self._ranks = _collect(self.model, self._dims, self._types)
        return self._ranks.get(name)

    def elem_type(self, name: str) -> int | None:
        """The value's element type (an onnx.TensorProto code) where the model gives it."""
        self(name)
        return self._types.get(name)

    def dim(self, name: str, axis: int) -> int | None:
        """The length of ``name``'s ``axis`` where the model gives it as a number, else None."""
        rank = self(name)
        if rank is None:
            return None
        dims = self._dims.get(name, ())
        axis = axis + rank if axis < 0 else axis
        return dims[axis] if 0 <= axis < len(dims) else None


def _collect(model: onnx.ModelProto, dims: dict[str, tuple], types: dict[str, int]) -> dict[str, int]:
    """Every value's rank the model gives; ``dims`` gets the lengths, None where not a number,
    and ``types`` the element types."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference refuses some models; the declared types still count
        inferred = model
    ranks: dict[str, int] = {}
    _from_graph(inferred.graph, ranks, dims, types)
    return ranks


def _from_graph(graph, ranks: dict[str, int], dims: dict[str, tuple], types: dict[str, int]) -> None:
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        tensor = value.type.tensor_type
        if value.type.HasField("tensor_type") and tensor.elem_type:
            types[value.name] = tensor.elem_type
        if value.type.HasField("tensor_type") and tensor.HasField("shape"):
            ranks[value.name] = len(tensor.shape.dim)
            dims[value.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
    for tensor in graph.initializer:
        ranks[tensor.name] = len(tensor.dims)
        dims[tensor.name] = tuple(tensor.dims)
        types[tensor.name] = tensor.data_type
    for node in graph.node:
        for index, out in enumerate(node.output):
            rank = CONTRIB_RANKS.get((node.op_type, index))
            if out and rank is not None:
                ranks.setdefault(out, rank)
        if node.op_type in SAME_RANK and node.input and node.input[0] in ranks and node.output:
            ranks.setdefault(node.output[0], ranks[node.input[0]])
        for sub in subgraphs(node):
            _from_graph(sub, ranks, dims, types)
