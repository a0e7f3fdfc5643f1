"""A convolution as the gpu target plans it (``ConvSpec``) and the policy of its fused epilogue:
which cuDNN graph form (add, bias, ReLU order; zeros as residual) each convolution gets, the
tensor layouts the graphs are fed in, and which engines' arithmetic is too loose for a dtype.
Shared by the frontend graph (``conv_frontend``) and the backend build (``cudnn_backend``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvSpec:
    x_shape: tuple          # logical NCHW lengths
    w_shape: tuple          # K, C/g, kh, kw
    pads_begin: tuple
    pads_end: tuple
    strides: tuple
    dilations: tuple
    group: int
    dtype: str
    bias: bool = False
    residual: bool = False
    relu: bool = False
    nhwc: bool = False      # input/output stored channels-last
    inputs: str = ""        # "bfloat16": X and W are split-bf16 operands (bias, residual, Y in dtype)

    @property
    def out_shape(self) -> tuple:
        n, _c, *sp = self.x_shape
        k = self.w_shape[0]
        out = [n, k]
        for i, s in enumerate(sp):
            eff = (self.w_shape[2 + i] - 1) * self.dilations[i] + 1
            out.append((s + self.pads_begin[i] + self.pads_end[i] - eff) // self.strides[i] + 1)
        return tuple(out)


# Fixed tensor uids, so a plan loaded from disk is fed by uid like one built here.
UID = {"X": 1, "W": 2, "Y": 3, "B": 4, "R": 5}


def layout_strides(lens, nhwc: bool) -> list:
    """Element strides of a logical NCHW tensor stored in its layout (channels-last: C fastest,
    then W, H, ... then N)."""
    if not nhwc:
        out, step = [], 1
        for n in reversed(lens):
            out.append(step)
            step *= n
        return list(reversed(out))
    n, c, *sp = lens
    strides = [0] * len(lens)
    step = 1
    strides[1] = step
    step *= c
    for i in reversed(range(len(sp))):
        strides[2 + i] = step
        step *= sp[i]
    strides[0] = step
    return strides


def storage_shape(lens, nhwc: bool) -> tuple:
    """The packed shape that holds a logical NCHW tensor in its layout."""
    if not nhwc:
        return tuple(lens)
    n, c, *sp = lens
    return (n, *sp, c)


def excluded_note_names(dtype: str, tf32: bool = False) -> list[str]:
    """The numerical notes of engines whose arithmetic is looser than ``dtype`` promises (the
    frontend's and the backend build's filter): FFT and Winograd transforms and reduced-precision
    accumulation always; for fp32 also tensor cores (TF32) and down-converted inputs, unless
    ``tf32`` (``GpuOptions.tf32``) allows TF32 as PyTorch does. Split-bf16 graphs pass "bfloat16"."""
    names = ["FFT", "WINOGRAD", "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6", "WINOGRAD_TILE_13x13",
             "REDUCED_PRECISION_REDUCTION"]
    if dtype == "float32" and not tf32:
        names += ["TENSOR_CORE", "DOWN_CONVERT_INPUTS"]
    return names


def residual_first(spec: ConvSpec) -> bool:
    """Whether the graph adds the residual before the bias: relu(conv + r + b), the form of
    cuDNN's classic fused convolution, which precompiled engines take; relu(conv + b + r) had
    only runtime-compiled ones for fp16 (on the H200 0.5-0.9 s of driver compilation per
    ResNet-50 residual convolution against ~0.01 s; outputs within one fp16 rounding,
    ``benchmarks/RESULTS.md``, retired probes). Split-bf16 graphs are runtime-compiled either way
    and keep bias first."""
    return spec.residual and spec.inputs != "bfloat16"


def zero_residual(spec: ConvSpec) -> bool:
    """Whether a split-bf16 convolution without a residual is built as relu(conv + b + r) with r
    a buffer of zeros. cuDNN gives that form its runtime-fusion engine (a plan per shape, a dozen
    tile choices), where conv + b (+ ReLU) gets one generic engine; on the H200 the former ran
    VGG-16's batch-1 layers at 224 and 112 pixels in 0.073 / 0.060 / 0.076 ms against 0.130 /
    0.080 / 0.106 and ResNet-50's batch-64 3 x 3 at 56 x 56 in 0.152 against 0.318 ms (one launch
    each, ``benchmarks/RESULTS.md``, retired probes), for reading the zeros and, on a machine whose
    driver cache lacks them, a runtime compile per shape (0.3-0.9 s) instead of one per form."""
    return spec.inputs == "bfloat16" and not spec.residual


def residual_tensor(spec: ConvSpec) -> bool:
    """Whether the graph reads a residual tensor R (the model's, or ``zero_residual``'s zeros)."""
    return spec.residual or zero_residual(spec)


def epilogue_order(spec: ConvSpec) -> tuple[str, ...]:
    """The operations after the convolution, in the order the cuDNN graph applies them. The
    plan-file key carries it, so a plan built by one graph form is never loaded for another."""
    steps = []
    if spec.residual and residual_first(spec):
        steps.append("add")
    if spec.bias:
        steps.append("bias")
    if residual_tensor(spec) and not residual_first(spec):
        steps.append("add")
    if spec.relu:
        steps.append("relu")
    return tuple(steps)


def graph_form(spec: ConvSpec) -> str:
    """``epilogue_order`` as the text the plan-file and plan-choice keys carry."""
    return ",".join(epilogue_order(spec))
