"""Which convolutions the grouped kernel takes (fp32, 2 to 32 channels a group, channels-last),
and the launch shape the depthwise and grouped kernels take by thread count (no GPU needed)."""
from dataclasses import replace

import numpy as np

import pytest

from compiler.targets.gpu import grouped_conv

from tests.compiler.targets.gpu.test_grouped import KERNEL_CASES, spec_of


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"c{c[1]}k{c[2]}g{c[3]}-k{c[6]}s{c[7]}")
def test_takes_fp32_grouped_convolutions_of_few_channels_a_group(case):
    spec, _attrs = spec_of(case)
    assert grouped_conv.applies(spec)
    assert not grouped_conv.applies(replace(spec, dtype="float16"))
    assert not grouped_conv.applies(replace(spec, group=1, w_shape=(spec.w_shape[0], spec.x_shape[1], 3, 3)))


def test_small_launches_take_narrower_vectors_and_tiles():
    from compiler.targets.gpu.kernels.depthwise import MIN_THREADS, launch_shape
    assert launch_shape(64 * 56, 56, 96, 4, 4) == (4, 4)                  # batch 64: plenty of threads
    vec, tile = launch_shape(14, 14, 384, 8, 4)                          # ConvNeXt-T 7x7 at batch 1
    assert (vec, tile) == (2, 1) and 14 * 14 * 384 // vec >= MIN_THREADS
    assert launch_shape(1, 1, 8, 8, 4) == (1, 1)                          # as narrow as it goes


def _planar(c, k, groups, dtype="float32"):
    from compiler.targets.gpu.kernels.conv import ConvSpec
    return ConvSpec((2, c, 9, 9), (k, c // groups, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), groups, dtype,
                    nhwc=True)


def test_grouped_convolutions_choose_between_the_split_and_our_kernel(monkeypatch):
    """fp32 grouped convolutions of few channels a group are timed on split-bf16 through cuDNN
    and on our grouped kernel (exact cuDNN is not timed: the kernel beat it); without the split,
    the kernel alone; depthwise ones never split (eight times the channels)."""
    from compiler.targets.gpu import conv_choice, conv_split
    from compiler.targets.gpu.ops_nn import fp32_paths
    from compiler.targets.gpu.options import GpuOptions
    monkeypatch.setattr(conv_split, "available", lambda: True)
    resnext = _planar(128, 128, 32)                  # 4 channels a group
    paths = fp32_paths(resnext, on_gpu=True)
    assert paths == ["split-cudnn", "grouped", "cudnn"]
    assert conv_choice.eligible_paths(resnext, paths, GpuOptions()) == ["split-cudnn", "grouped"]
    assert conv_choice.eligible_paths(resnext, paths, GpuOptions(fp32_split=False)) == ["grouped"]
    wide = _planar(128, 128, 2)                      # 64 a group: past the kernel's groups
    assert fp32_paths(wide, on_gpu=True) == ["split-cudnn", "cudnn"]
    assert not conv_split.applies(_planar(32, 32, 32), on_gpu=True)      # depthwise
    assert fp32_paths(_planar(128, 128, 32, "float16"), on_gpu=True) == []


def _bf16(x):
    """float32 -> bf16 bit patterns (uint16), rounded to nearest even, as the split kernel does."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _float(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _along_last(x, lo):
    """NumPy stand-in for ``split_bf16.along_last``: (..., K) -> (..., width(K)) bf16 parts."""
    from compiler.targets.gpu.kernels import split_bf16
    x = np.asarray(x, dtype=np.float32)
    hi = _bf16(x)
    low = _bf16(x - _float(hi))
    parts = [hi, hi, hi]
    parts[lo] = low
    k = x.shape[-1]
    pad = np.zeros(x.shape[:-1] + (split_bf16.width(k) - 3 * k,), dtype=np.uint16)
    return np.concatenate(parts + [pad], axis=-1)


@pytest.mark.parametrize("groups, per_group", [(32, 4), (8, 8), (3, 5), (1, 6)])
def test_a_grouped_convolution_over_each_groups_split_parts_is_the_fp32_one(monkeypatch, groups, per_group):
    """The channel layout the split-cudnn path gives a grouped convolution (each group's
    [hi | hi | lo] activations against its [hi | lo | hi] weights): the reference's grouped
    convolution of those parts, widened as ``cudnn_spec`` says, equals the fp32 convolution
    within the split's ~1e-5."""
    from compiler.ops.registry import get_op
    from compiler.targets.gpu import conv_split
    from compiler.targets.gpu.kernels import split_bf16
    monkeypatch.setattr(split_bf16, "along_last", _along_last)
    rng = np.random.default_rng(groups)
    c, k = groups * per_group, groups * 3
    x = rng.standard_normal((2, c, 7, 6)).astype(np.float32)
    w = rng.standard_normal((k, per_group, 3, 3)).astype(np.float32)
    x3 = _float(conv_split._split_groups(x.transpose(0, 2, 3, 1), groups, split_bf16.LO_LEFT))
    w3 = _float(split_bf16.along_last(w.transpose(0, 2, 3, 1), split_bf16.LO_RIGHT))
    spec = conv_split.cudnn_spec(_planar(c, k, groups))
    assert x3.shape[-1] == spec.x_shape[1] and w3.shape[-1] == spec.w_shape[1]
    attrs = {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1],
             "group": groups, "auto_pad": "NOTSET"}
    conv = get_op("Conv")
    want = conv.compute(attrs, x, w)
    got = conv.compute(attrs, x3.transpose(0, 3, 1, 2), w3.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
