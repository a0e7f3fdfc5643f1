"""Attention on the gpu target: the ``Attention`` op (as ONNX files carry it, or as
``fuse_attention`` makes it from exported primitives) runs as cuDNN's fused flash attention in
fp16/bf16, and otherwise as two strided cuBLAS products around one softmax kernel
(``attention_fallback``; fp32 products split like the target's other fp32 products), or
matmul, softmax, matmul where neither runs.

``takes`` is the pass's choice: attentions in fp16 or bf16 whose head size cuDNN's fused engines
run, and fp32/fp16 attentions the strided path runs.
"""
from __future__ import annotations

import logging
import math

from compiler.passes.fuse_attention import Match

from . import attention_fallback, libraries, matmul_split
from .kernels import sdpa
from .lowering import lowers

log = logging.getLogger(__name__)


def takes(m: Match) -> bool:
    """Whether the gpu target wants this recognised attention fused."""
    dtype = m.q.shape.dtype
    return sdpa.supported(dtype, m.q.shape.lens[-1], m.v.shape.lens[-1]) or attention_fallback.takes(dtype, m.mask_dtype)


def _plain(ins) -> bool:
    """An Attention this lowering runs: 4-D, no cache, no window/softcap, causal only over as many
    keys as queries, one output, an additive mask if any, query heads in equal groups over the
    key/value heads (grouped-query attention; cuDNN serves the groups, the other paths repeat)."""
    a = ins.attrs
    names = a.get("inputs", [])
    if set(names) - {"Q", "K", "V", "attn_mask"} or a.get("outputs", 1) != 1 \
            or a.get("softcap") or a.get("left_window_size", -1) >= 0 or a.get("right_window_size", -1) >= 0 \
            or a.get("qk_matmul_output_mode", 0) or a.get("softmax_precision") is not None:
        return False
    shapes = dict(zip(names, (i.shape for i in ins.inputs)))
    q, k, v = shapes["Q"], shapes["K"], shapes["V"]
    mask = shapes.get("attn_mask")
    return (q.ndim == k.ndim == v.ndim == 4 and q.static and k.static and v.static
            and q.lens[1] % k.lens[1] == 0 and k.lens[1] == v.lens[1]
            and (mask is None or (mask.dtype == q.dtype and mask.static))
            and (not a.get("is_causal") or q.lens[2] == k.lens[2]))


def _unit_head_stride(xp, a):
    return a if a.strides[-1] == a.itemsize else xp.ascontiguousarray(a)


def _bias(xp, mask, q_len: int, kv_len: int):
    """The additive mask as cuDNN takes it: 4-D, batch and head axes of one or full, the
    (queries, keys) plane contiguous."""
    lens = (1,) * (4 - mask.ndim) + tuple(mask.shape)
    full = (lens[0], lens[1], q_len, kv_len)
    return xp.ascontiguousarray(xp.broadcast_to(mask.reshape(lens), full))


def _decomposed(xp, scale: float, causal: bool):
    """matmul, softmax, matmul, the statistics in fp32: where cuDNN has no engine."""
    def run(q, k, v, mask=None):
        s = xp.matmul(q.astype("float32"), xp.swapaxes(k, -1, -2).astype("float32")) * scale
        if mask is not None:
            s = s + mask.astype("float32")
        if causal:
            n = s.shape[-1]
            s = xp.where(xp.tri(n, n, dtype=bool), s, -xp.inf)
        s = xp.exp(s - s.max(axis=-1, keepdims=True))
        p = (s / s.sum(axis=-1, keepdims=True)).astype(q.dtype)
        return xp.matmul(p, v)
    return run


def output_order(ins) -> tuple:
    """The memory order to write ``ins``'s output in: that of the Transpose that is its only
    reader (its result is then contiguous, so the reshape after it is a view), where that keeps
    the head size innermost; else sequence-major."""
    users = ins.users
    if len(users) == 1 and users[0].op == "Transpose":
        perm = tuple(int(p) for p in users[0].attrs.get("perm", ()))
        if sorted(perm) == [0, 1, 2, 3] and perm[3] == 3:
            return perm
    return sdpa.SEQUENCE_MAJOR


@lowers("Attention")
def _attention(ins, L):
    if not _plain(ins):
        return None     # the op's reference computation on device arrays
    xp = L.xp
    q_shape, v_shape = ins.inputs[0].shape, ins.inputs[2].shape
    dtype = q_shape.dtype
    scale = ins.attrs.get("scale")
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(q_shape.lens[3])
    q_len, kv_len = q_shape.lens[2], ins.inputs[1].shape.lens[2]
    mask_dtype = ins.inputs[3].shape.dtype if len(ins.inputs) > 3 else None
    causal = bool(ins.attrs.get("is_causal"))
    strided = L.backend.on_gpu and attention_fallback.takes(dtype, mask_dtype)
    split = matmul_split.enabled(L.backend.on_gpu, dtype, L.options)
    slow = attention_fallback.runner(xp, scale, causal, split) if strided else _decomposed(xp, scale, causal)
    order = output_order(ins)
    fused = (L.backend.on_gpu and sdpa.supported(dtype, q_shape.lens[3], v_shape.lens[3])
             and libraries.frontend() is not None)

    def attention(q, k, v, mask=None):
        if attention.fused:
            q, k, v = (_unit_head_stride(xp, a) for a in (q, k, v))
            bias = _bias(xp, mask, q_len, kv_len) if mask is not None else None
            try:
                return sdpa.plan_for(dtype, q, k, v, bias, scale, order, causal, L.options)(q, k, v, bias)
            except Exception as exc:  # noqa: BLE001 - no engine for this geometry: the slow path
                log.warning("cuDNN attention refused %s: %s; matmul-softmax-matmul instead",
                            ins.name or "Attention", str(exc)[:200])
                attention.fused, attention.path = False, getattr(slow, "path", "matmul-softmax-matmul")
                attention.capturable = getattr(slow, "capturable", False)   # not CuPy's matmul
        if k.shape[1] != q.shape[1]:      # grouped key/value heads, each serving a run of query heads
            k, v = (xp.repeat(a, q.shape[1] // a.shape[1], axis=1) for a in (k, v))
        return slow(q, k, v, mask)
    attention.fused = fused
    attention.capturable = fused or getattr(slow, "capturable", False)
    attention.path = "cudnn-sdpa" if fused else getattr(slow, "path", "matmul-softmax-matmul")
    return attention
