"""RotaryEmbedding on the gpu target: the halves form over (batch, heads, sequence, head size),
of all of each head or its first ``rotary_embedding_dim`` features, with (batch or 1, sequence,
half) caches and no position ids, which ``recognize_rotary`` makes of exported rotations, as one
kernel (``kernels.rotary``); elsewhere (emulation, fp64) the same arithmetic in array operations.
Other forms run the reference op."""
from __future__ import annotations

from .lowering import lowers

ACC = {"float16": "float32"}


def _rotated_width(ins) -> int:
    """How many of each head's features ``ins`` rotates."""
    return int(ins.attrs.get("rotary_embedding_dim") or 0) or ins.inputs[0].shape.lens[-1]


def applies(ins) -> bool:
    """Whether ``ins`` is a rotation of the form the kernel takes."""
    a = ins.attrs
    if a.get("interleaved") or a.get("positions") or len(ins.inputs) != 3:
        return False
    x, cos, sin = (i.shape for i in ins.inputs)
    if not x.static or x.ndim != 4:
        return False
    batch, _heads, seq, width = x.lens
    rotated = _rotated_width(ins)
    if rotated % 2 or not 0 < rotated <= width:
        return False
    lens = ((1, seq, rotated // 2), (batch, seq, rotated // 2))
    return all(c.static and c.dtype == x.dtype and tuple(c.lens) in lens for c in (cos, sin))


@lowers("RotaryEmbedding")
def _rotary(ins, L):
    if not applies(ins):
        return None
    xp = L.xp
    dtype = ins.shape.dtype
    if L.backend.on_gpu and dtype in ("float16", "float32"):
        from .kernels.rotary import rotary_half

        def run(x, cos, sin):
            if any(st < 0 for st in x.strides):
                x = xp.ascontiguousarray(x)
            return rotary_half(x, xp.ascontiguousarray(cos), xp.ascontiguousarray(sin))
        run.path = "rotary-half"
        return run
    acc = ACC.get(dtype, dtype)
    half = _rotated_width(ins) // 2

    def rotate(x, cos, sin):
        xf = x.astype(acc, copy=False)
        x1, x2 = xf[..., :half], xf[..., half:2 * half]
        c, s = (v.astype(acc, copy=False)[:, None] for v in (cos, sin))   # over the heads
        return xp.concatenate([c * x1 - s * x2, s * x1 + c * x2, xf[..., 2 * half:]],
                              axis=-1).astype(dtype, copy=False)
    return rotate
