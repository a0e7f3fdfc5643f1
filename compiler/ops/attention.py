"""Attention (opset 23+): scaled dot-product attention over 4-D (batch, heads, seq, head) or
3-D (batch, seq, heads·head) inputs, with past key/value caches, grouped key/value heads,
masks (boolean or additive), causal and sliding-window masking, softcap and the optional
QK-product output."""
from __future__ import annotations

import math

import numpy as np

from compiler.ir.shape import Shape

from .common import given_inputs, tuple_shape, widen
from .registry import Op, register_op

INPUTS = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]


# The attributes an Attention instruction carries besides its inputs and scale, at ONNX's defaults.
DEFAULTS = {"is_causal": 0, "q_num_heads": None, "kv_num_heads": None, "softcap": 0.0,
            "qk_matmul_output_mode": 0, "softmax_precision": None, "left_window_size": -1,
            "right_window_size": -1}
_TYPES = {"is_causal": int, "softcap": float, "qk_matmul_output_mode": int, "left_window_size": int,
          "right_window_size": int}


def attention_attrs(inputs: list[str], scale, outputs: int = 1, **given) -> dict:
    """An Attention instruction's attributes: ``inputs`` (the names of the inputs it was given),
    ``scale`` (None: 1/sqrt(head size)), ``outputs`` and any of ``DEFAULTS`` given."""
    attrs = {**DEFAULTS, **given}
    for key, kind in _TYPES.items():
        attrs[key] = kind(attrs[key])
    return {"inputs": list(inputs), "scale": scale, **attrs, "outputs": outputs}


def _heads(x, heads):
    """(batch, seq, heads·size) → (batch, heads, seq, size)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _additive(mask, dtype):
    return np.where(mask, 0, -np.inf).astype(dtype) if mask.dtype == np.bool_ else mask.astype(dtype)


def _allowed(q_len, kv_len, offset, causal, left, right):
    """Which keys each query may see: ``offset`` places query i at absolute position
    offset + i (a scalar, or one per batch)."""
    i = np.arange(q_len).reshape(-1, 1)
    j = np.arange(kv_len).reshape(1, -1)
    offset = np.asarray(offset)
    pos = i + (offset.reshape(-1, 1, 1) if offset.ndim else offset)
    ok = np.ones(np.broadcast_shapes(np.shape(pos), j.shape), dtype=bool)
    if causal:
        ok &= j <= pos
    if left >= 0:
        ok &= pos - j <= left
    if right >= 0:
        ok &= j - pos <= right
    return ok if not offset.ndim else ok[:, None]


def _softmax_rows(x):
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(top), 0, top))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


@register_op
class Attention(Op):
    name = "Attention"

    def from_onnx(self, node):
        a = node.attrs
        present, inputs = given_inputs(node, INPUTS)
        precision = a.get("softmax_precision")
        if precision is not None:
            from compiler.onnx.types import dtype_name
            precision = dtype_name(int(precision))
        given = {k: a[k] for k in DEFAULTS if a.get(k) is not None}
        return attention_attrs(present, a.get("scale"), outputs=max(node.num_outputs, 1),
                               **{**given, "softmax_precision": precision}), inputs

    def shape(self, attrs, inputs, literals):
        s = dict(zip(attrs["inputs"], inputs))
        q, k, v = s["Q"], s["K"], s["V"]
        past = s["past_key"].lens[2] if "past_key" in s else 0
        if q.ndim == 3:
            qh, kvh = attrs["q_num_heads"], attrs["kv_num_heads"]
            b, q_len = q.lens[:2]
            kv_size, v_size = k.lens[2] // kvh, v.lens[2] // kvh
            y = Shape(q.dtype, (b, q_len, qh * v_size))
            kv_len = k.lens[1]
        else:
            b, qh, q_len = q.lens[:3]
            kvh, kv_size, v_size, kv_len = k.lens[1], k.lens[3], v.lens[3], k.lens[2]
            y = Shape(q.dtype, (b, qh, q_len, v_size))
        total = None if kv_len is None or past is None else past + kv_len
        outs = [y, Shape(q.dtype, (b, kvh, total, kv_size)), Shape(q.dtype, (b, kvh, total, v_size)),
                Shape(q.dtype, (b, qh, q_len, total))]
        return y if attrs["outputs"] == 1 else tuple_shape(*outs[:attrs["outputs"]])

    def compute(self, attrs, *args):
        v = dict(zip(attrs["inputs"], args))
        dtype = v["Q"].dtype
        q, k, val = (widen(v[n]) for n in ("Q", "K", "V"))
        three_d = q.ndim == 3
        if three_d:
            q, k, val = _heads(q, attrs["q_num_heads"]), _heads(k, attrs["kv_num_heads"]), _heads(val, attrs["kv_num_heads"])
        scale = attrs["scale"] if attrs["scale"] is not None else 1 / math.sqrt(q.shape[3])
        root = q.dtype.type(math.sqrt(scale))
        past_len = 0
        if "past_key" in v:
            past_len = v["past_key"].shape[2]
            k = np.concatenate([widen(v["past_key"]), k], axis=2)
            val = np.concatenate([widen(v["past_value"]), val], axis=2)
        present_k, present_v = k, val
        q_len, kv_len = q.shape[2], k.shape[2]
        bias = np.zeros((q_len, kv_len), dtype=q.dtype)
        mask = v.get("attn_mask")
        if mask is not None:
            short = kv_len - mask.shape[-1]
            if short > 0:  # a mask for fewer keys than the cache holds: the rest are masked
                mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, short)],
                              constant_values=False if mask.dtype == np.bool_ else -np.inf)
            bias = bias + _additive(mask, q.dtype)
        lens = v.get("nonpad_kv_seqlen")
        offset = lens.reshape(-1) - q_len if lens is not None and "past_key" not in v else past_len
        left, right = attrs["left_window_size"], attrs["right_window_size"]
        if attrs["is_causal"] or left >= 0 or right >= 0:
            bias = bias + _additive(_allowed(q_len, kv_len, offset, attrs["is_causal"], left, right), q.dtype)
        if lens is not None:
            keep = np.arange(kv_len) < lens.reshape(-1, 1)
            bias = bias + _additive(keep.reshape(-1, 1, 1, kv_len), q.dtype)
        if k.shape[1] != q.shape[1]:  # grouped key/value heads serve several query heads
            reps = q.shape[1] // k.shape[1]
            k, val = np.repeat(k, reps, axis=1), np.repeat(val, reps, axis=1)
        qk = (q * root) @ np.swapaxes(k * root, -1, -2)
        if attrs["softcap"] > 0:
            qk = attrs["softcap"] * np.tanh(qk / attrs["softcap"])
        scores = qk + bias
        mode = attrs["qk_matmul_output_mode"]
        if attrs["softmax_precision"]:
            scores = scores.astype(attrs["softmax_precision"])
        probs = _softmax_rows(scores)
        probs = np.where(np.isneginf(np.max(bias, axis=-1, keepdims=True)), 0, probs)
        qk_out = {2: qk + bias, 3: probs}.get(mode, qk)
        y = probs.astype(q.dtype) @ val
        if three_d:
            y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
        outs = [y, present_k, present_v, qk_out]
        outs = [np.asarray(o).astype(dtype) for o in outs[:attrs["outputs"]]]
        return outs[0] if attrs["outputs"] == 1 else tuple(outs)


@register_op
class RotaryEmbedding(Op):
    """Rotate the first ``rotary_embedding_dim`` features of each head by per-position angles
    (cos/sin caches, gathered by position_ids when given), in halves or interleaved pairs."""

    name = "RotaryEmbedding"

    def from_onnx(self, node):
        a = node.attrs
        return {"interleaved": int(a.get("interleaved", 0)), "rotary_embedding_dim": int(a.get("rotary_embedding_dim", 0)),
                "num_heads": int(a.get("num_heads", 0)), "positions": node.input(3) is not None}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, cos, sin, positions=None):
        dtype = x.dtype
        xs = widen(x)
        # Work on (batch, seq, heads, head_size).
        h = xs.transpose(0, 2, 1, 3) if xs.ndim == 4 else xs.reshape(xs.shape[0], xs.shape[1], attrs["num_heads"], -1)
        dim = attrs["rotary_embedding_dim"] or h.shape[3]
        cos, sin = widen(cos), widen(sin)
        if positions is not None:
            cos, sin = cos[positions], sin[positions]
        cos, sin = cos[:, :, None, :], sin[:, :, None, :]
        part = h[..., :dim]
        if attrs["interleaved"]:
            x1, x2 = part[..., 0::2], part[..., 1::2]
        else:
            x1, x2 = part[..., :dim // 2], part[..., dim // 2:]
        real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
        if attrs["interleaved"]:
            rotated = np.stack([real, imag], axis=-1).reshape(part.shape)
        else:
            rotated = np.concatenate([real, imag], axis=-1)
        out = np.concatenate([rotated, h[..., dim:]], axis=-1)
        out = out.transpose(0, 2, 1, 3) if xs.ndim == 4 else out.reshape(xs.shape)
        return out.astype(dtype)


@register_op
class LinearAttention(Op):
    """Recurrent linear attention over (batch, time, heads·size) inputs: a (key × value) state
    per key/value head, updated each step (optionally decayed — "gated" — and/or corrected by
    what it already recalls — "delta"), read by the queries."""

    name = "LinearAttention"
    names = ["query", "key", "value", "past_state", "decay", "beta"]

    def from_onnx(self, node):
        a = node.attrs
        present, inputs = given_inputs(node, self.names)
        return {"inputs": present, "q_num_heads": int(a["q_num_heads"]), "kv_num_heads": int(a["kv_num_heads"]),
                "scale": float(a.get("scale", 0.0)), "update_rule": a.get("update_rule", "gated_delta")}, inputs

    def shape(self, attrs, inputs, literals):
        s = dict(zip(attrs["inputs"], inputs))
        q, k, v = s["query"], s["key"], s["value"]
        qh, kvh = attrs["q_num_heads"], attrs["kv_num_heads"]
        dk, dv = k.lens[2] // kvh, v.lens[2] // kvh
        state_dtype = s["past_state"].dtype if "past_state" in s else q.dtype
        return tuple_shape(Shape(q.dtype, (q.lens[0], q.lens[1], qh * dv)), Shape(state_dtype, (q.lens[0], kvh, dk, dv)))

    def compute(self, attrs, *args):
        v = dict(zip(attrs["inputs"], args))
        qh, kvh, rule = attrs["q_num_heads"], attrs["kv_num_heads"], attrs["update_rule"]
        q, k, val = (_heads(widen(v[n]).astype(np.float32), h) for n, h in
                     (("query", qh), ("key", kvh), ("value", kvh)))
        b, _, t, dk = k.shape
        dv = val.shape[3]
        state = np.zeros((b, kvh, dk, dv), np.float32) if "past_state" not in v else \
            widen(v["past_state"]).astype(np.float32)
        decay = beta = None
        if "decay" in v:  # one decay per head, or per head and key feature
            decay = widen(v["decay"]).astype(np.float32)
            decay = decay.reshape(b, t, kvh, -1).transpose(0, 2, 1, 3)
        if "beta" in v:
            beta = widen(v["beta"]).astype(np.float32)
            beta = beta.reshape(b, t, beta.shape[-1], 1).transpose(0, 2, 1, 3)
        scale = attrs["scale"] or 1 / np.sqrt(q.shape[3])
        out = np.zeros((b, qh, t, dv), np.float32)
        for i in range(t):
            ki, vi = k[:, :, i], val[:, :, i]
            if rule in ("gated", "gated_delta"):
                state = state * np.exp(decay[:, :, i])[..., None]
            if rule in ("delta", "gated_delta"):
                vi = beta[:, :, i] * (vi - np.einsum("bhkv,bhk->bhv", state, ki))
            state = state + ki[..., :, None] * vi[..., None, :]
            read = np.repeat(state, qh // kvh, axis=1)
            out[:, :, i] = scale * np.einsum("bhk,bhkv->bhv", q[:, :, i], read)
        y = out.transpose(0, 2, 1, 3).reshape(b, t, qh * dv).astype(v["query"].dtype)
        state_dtype = v["past_state"].dtype if "past_state" in v else v["query"].dtype
        return y, state.astype(state_dtype)


def _softmax_dtype(dtype: str, precision: str | None) -> str:
    if precision:
        return precision
    return "float32" if np.dtype(dtype).itemsize < 4 else dtype


@register_op
class FlexAttention(Op):
    """ai.onnx.preview FlexAttention: attention over 4-D inputs whose scores and probabilities
    may pass through submodules (score_mod, prob_mod) of one tensor each."""

    name = "FlexAttention"
    domain = "ai.onnx.preview"
    foldable = False

    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        precision = node.attrs.get("softmax_precision")
        q, k = node.input(0).shape, node.input(1).shape
        dtype = _softmax_dtype(q.dtype, None if precision is None else dtype_name(int(precision)))
        scores = Shape(dtype, (q.lens[0], q.lens[1], q.lens[2], k.lens[2]))
        mods = [m for m in ("score_mod", "prob_mod") if m in node.graphs]
        modules = [node.subgraph(m, [scores]) for m in mods]
        return {"scale": node.attrs.get("scale"), "dtype": dtype, "mods": mods}, node.present_inputs(), modules

    def shape(self, attrs, inputs, literals, module_inputs=()):
        q, v = inputs[0], inputs[2]
        return Shape(v.dtype, (q.lens[0], q.lens[1], q.lens[2], v.lens[3]))

    def compute(self, attrs, q, k, v):
        return self.compute_modules(attrs, None, [], q, k, v)

    def compute_modules(self, attrs, run_module, modules, q, k, v, context=None):
        mods = dict(zip(attrs["mods"], modules))
        scale = attrs["scale"] if attrs["scale"] is not None else 1 / np.sqrt(q.shape[3])
        if k.shape[1] != q.shape[1]:
            reps = q.shape[1] // k.shape[1]
            k, v = np.repeat(k, reps, axis=1), np.repeat(v, reps, axis=1)
        root = np.asarray(np.sqrt(np.float32(scale))).astype(q.dtype)
        scores = ((q * root) @ np.swapaxes(k * root, -1, -2)).astype(attrs["dtype"])
        if "score_mod" in mods:
            scores = np.asarray(run_module(mods["score_mod"], [scores])[0]).astype(attrs["dtype"])
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = e / e.sum(axis=-1, keepdims=True)
        if "prob_mod" in mods:
            probs = np.asarray(run_module(mods["prob_mod"], [probs])[0]).astype(attrs["dtype"])
        return (probs @ v.astype(attrs["dtype"])).astype(v.dtype)
