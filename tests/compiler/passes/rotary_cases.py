"""Rotary position embeddings as exporters write them (Llama's ``x * cos + rotate_half(x) * sin``
over (batch, heads, sequence, head size)), with switches for the near misses the recognizer must
leave alone. Shared by the pass's tests and the gpu target's."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from tests.compiler.targets.gpu.cases import init, model, vi

BIG = 2 ** 63 - 1


def caches(seq: int, width: int, batch: int = 1, heads: int = 1, halves_equal: bool = True):
    """(cos, sin) of shape (batch, heads, seq, width): angles of ``cat(freqs, freqs)`` as Llama
    builds them (or, unequal, each half its own frequencies)."""
    half = width // 2
    freqs = 1.0 / 10000 ** (np.arange(half) / half)
    angles = np.arange(seq)[:, None] * freqs[None, :]
    other = angles * 1.5 if not halves_equal else angles
    full = np.concatenate([angles, other], axis=-1)
    full = full[None, None] + 0.1 * np.arange(batch)[:, None, None, None] \
        + 0.2 * np.arange(heads)[None, :, None, None]
    return np.cos(full).astype(np.float32), np.sin(full).astype(np.float32)


def rotary_block(batch=2, seq=6, heads=3, width=8, cache_batch=1, cache_heads=1, halves_equal=True,
                 swap_halves=False, order="x*cos", extra_output=None, cos_input=False, dtype="float32",
                 rotated=None):
    """x (batch, seq, heads * width) -> heads -> rotated; ``extra_output`` names a middle value
    also returned; ``cos_input``: cos is a graph input, not a literal; ``rotated``: only the first
    that many features of each head turn, the rest are concatenated after them (Phi)."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rotated = rotated or width
    half = rotated // 2
    cos, sin = caches(seq, rotated, cache_batch, cache_heads, halves_equal)
    first, second = ("lo", "hi") if swap_halves else ("hi", "lo")
    heads_of = [helper.make_node("Transpose", ["xh"], ["q"], perm=[0, 2, 1, 3])]
    if rotated < width:     # q is the first ``rotated`` features; the rest join after the rotation
        heads_of = [helper.make_node("Transpose", ["xh"], ["whole"], perm=[0, 2, 1, 3]),
                    helper.make_node("Slice", ["whole", "zero", "r", "last"], ["q"]),
                    helper.make_node("Slice", ["whole", "r", "end", "last"], ["rest"])]
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["xh"]), *heads_of,
             helper.make_node("Slice", ["q", "h", "end", "last"], ["hi"]),
             helper.make_node("Slice", ["q", "zero", "h", "last"], ["lo"]),
             helper.make_node("Neg", [first], ["neg"]),
             helper.make_node("Concat", ["neg", second], ["rot"], axis=-1),
             helper.make_node("Mul", ["q", "cos"] if order == "x*cos" else ["cos", "q"], ["a"]),
             helper.make_node("Mul", ["rot", "sin"] if order == "x*cos" else ["sin", "rot"], ["b"]),
             helper.make_node("Add", ["a", "b"] if order == "x*cos" else ["b", "a"],
                              ["y" if rotated == width else "turned"])]
    if rotated < width:
        nodes.append(helper.make_node("Concat", ["turned", "rest"], ["y"], axis=-1))
    inits = [init("shape", np.array([batch, seq, heads, width], np.int64)),
             init("h", np.array([half], np.int64)), init("end", np.array([BIG], np.int64)),
             init("r", np.array([rotated], np.int64)),
             init("zero", np.array([0], np.int64)), init("last", np.array([-1], np.int64)),
             init("sin", sin.astype(dtype))]
    inputs = [vi("x", (batch, seq, heads * width), t)]
    if cos_input:
        inputs.append(vi("cos", cos.shape, t))
    else:
        inits.append(init("cos", cos.astype(dtype)))
    outputs = [vi("y", None, t)] + ([vi(extra_output, None, t)] if extra_output else [])
    return model(nodes, inputs, outputs, inits)


def feeds(batch=2, seq=6, heads=3, width=8, seed=3, dtype="float32", cos_input=False, cache_heads=1):
    rng = np.random.default_rng(seed)
    out = {"x": rng.standard_normal((batch, seq, heads * width)).astype(dtype)}
    if cos_input:
        out["cos"] = caches(seq, width, 1, cache_heads)[0].astype(dtype)
    return out
