"""GroupNormalization and InstanceNormalization on the gpu target as ``kernels.norm_groups``' one
kernel where it takes the instruction: fp32 or fp16 data of rank 3 or more and static shape,
scale and bias of the data's type or fp32. Others keep the CuPy lowering. A ``swish`` attribute
(set by ``fuse_norm_swish``) applies SiLU in the same store."""
from __future__ import annotations

from .kernels import norm_groups as kernel
from .kernels.channels_last import pixel_stride


def _groups(ins) -> int:
    c = ins.inputs[0].shape.lens[1]
    return c if ins.op == "InstanceNormalization" else int(ins.attrs["num_groups"])


def applies(ins) -> bool:
    if ins.op not in ("InstanceNormalization", "GroupNormalization") or len(ins.inputs) != 3:
        return False
    x = ins.inputs[0].shape
    if x.dtype not in ("float32", "float16") or not x.static or x.ndim < 3:
        return False
    c, groups = x.lens[1], _groups(ins)
    if groups <= 0 or c % groups:
        return False
    params = [v.shape for v in ins.inputs[1:]]
    return all(p.dtype in (x.dtype, "float32") and p.static and tuple(p.lens) in ((c,), (groups,)) for p in params) \
        and tuple(params[0].lens) == tuple(params[1].lens) and params[0].dtype == params[1].dtype


def norm_groups_runner(xp, ins):
    """The runner of ``ins`` (``applies``): (x, scale, bias) -> y, stored as x is (packed or
    channels-last)."""
    c, groups = ins.inputs[0].shape.lens[1], _groups(ins)
    per_group = tuple(ins.inputs[1].shape.lens) == (groups,) and groups != c
    eps = float(ins.attrs.get("epsilon", 1e-5))
    swish = bool(ins.attrs.get("swish"))

    def run(x, scale, bias):
        channels_last = x.ndim == 4 and not x.flags.c_contiguous and pixel_stride(x) == c
        if not channels_last:
            x = xp.ascontiguousarray(x)
        return kernel.norm_groups(x, xp.ascontiguousarray(scale), xp.ascontiguousarray(bias), groups, eps,
                                  per_group, channels_last, swish)
    run.path = "norm-groups"
    return run
