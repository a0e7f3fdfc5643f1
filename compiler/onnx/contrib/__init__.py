"""ONNX Runtime's contrib operators (domain ``com.microsoft``, and the few it registers in the
standard domain) expanded into standard operators before import.

Models shipped by other projects are often ONNX Runtime's own output: its transformer optimizer
writes ``Attention``, ``SkipLayerNormalization``, ``FastGelu`` and the like, its quantizer writes
``QLinearAdd`` or ``DynamicQuantizeMatMul``. Each such node is replaced here by the standard
nodes that compute it, written at one fixed opset (``EXPANSION_OPSET``) in a domain of our own
whatever opset the model uses, so that every target runs it and the passes that recognise
attention, normalisations and epilogues see the same forms an exporter writes. A contrib node
with no expansion, or a form of one that is not expanded (a KV cache, rotary inside Attention),
stays and is reported as unsupported at import.

The expansions, by file: ``activations`` (Gelu family, FusedMatMul, BiasAdd), ``normalization``
(skip and simplified layer norms, EmbedLayerNormalization), ``attention``,
``group_query_attention`` (GroupQueryAttention, with its key/value cache), ``quantized``,
``low_bit`` (MatMulNBits), ``rotary`` (RotaryEmbedding), ``group_norm`` (GroupNorm, SkipGroupNorm,
BiasSplitGelu), ``convolution`` (NhwcConv).
"""
from __future__ import annotations

import onnx

from ..load import all_nodes, subgraphs
from .builder import EXPANSION_DOMAIN, EXPANSION_OPSET, Builder, Unexpandable
from . import (activations, attention, convolution, group_norm, group_query_attention, low_bit, normalization,
               quantized, rotary)
from .ranks import Ranks

MICROSOFT = "com.microsoft"

# (domain, op_type) -> expansion(node, builder)
EXPANSIONS = {
    **{(MICROSOFT, op): f for op, f in activations.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in normalization.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in attention.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in group_query_attention.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in quantized.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in low_bit.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in rotary.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in group_norm.EXPANSIONS.items()},
    **{(MICROSOFT, op): f for op, f in convolution.EXPANSIONS.items()},
    # ONNX Runtime registers these two in the standard domain; ONNX itself has no such operator.
    ("", "SimplifiedLayerNormalization"): normalization.simplified_layer_norm,
    ("", "SkipSimplifiedLayerNormalization"): normalization.skip_simplified_layer_norm,
}


def _key(node) -> tuple[str, str]:
    domain = node.domain or ""
    return ("" if domain == "ai.onnx" else domain, node.op_type)


def expand_contrib_ops(model: onnx.ModelProto, refused: dict | None = None) -> onnx.ModelProto:
    """``model`` with every contrib node that has an expansion replaced by standard nodes (its
    subgraphs too); the model itself when there is none. ``refused`` (when given) gets, for each
    node left as it was, why its form is not expanded, keyed by ``refusal_key(node)``."""
    if not any(_key(n) in EXPANSIONS for n in all_nodes(model.graph)):
        return model
    expanded = onnx.ModelProto()
    expanded.CopyFrom(model)
    _expand_graph(expanded.graph, Ranks(model), _names(expanded.graph), {} if refused is None else refused)
    if not any(o.domain == EXPANSION_DOMAIN for o in expanded.opset_import):
        expanded.opset_import.append(onnx.helper.make_opsetid(EXPANSION_DOMAIN, EXPANSION_OPSET))
    return expanded


def refusal_key(node) -> tuple:
    """A node's key in ``expand_contrib_ops``'s ``refused``: its operator and outputs (a node's
    outputs are its own in a valid model, and its name may be empty)."""
    return (node.op_type, tuple(node.output))


def _expand_graph(graph, ranks: Ranks, taken: set[str], refused: dict) -> None:
    """Expand ``graph``'s nodes in place, depth first; ``taken``: every value name of the model,
    which fresh names avoid."""
    nodes = list(graph.node)
    del graph.node[:]
    for node in nodes:
        for sub in subgraphs(node):
            _expand_graph(sub, ranks, taken, refused)
        expansion = EXPANSIONS.get(_key(node))
        if expansion is None:
            graph.node.append(node)
            continue
        builder = Builder(node, taken, ranks)
        try:
            expansion(node, builder)
        except Unexpandable as why:
            graph.node.append(node)  # the import names the node as unsupported, and the reason
            refused[refusal_key(node)] = f"this form is not expanded: {why}"
            continue
        graph.node.extend(builder.nodes)


def _names(graph) -> set[str]:
    names = {v.name for v in list(graph.input) + list(graph.output) + list(graph.value_info)}
    names |= {t.name for t in graph.initializer}
    for node in all_nodes(graph):
        names.update(node.output)
        names.update(node.input)
    return names


__all__ = ["expand_contrib_ops", "refusal_key", "EXPANSION_DOMAIN", "EXPANSION_OPSET", "EXPANSIONS"]
