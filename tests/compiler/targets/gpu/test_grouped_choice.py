"""Which convolutions the grouped kernel takes (fp32, 2 to 32 channels a group, channels-last),
and the launch shape the depthwise and grouped kernels take by thread count (no GPU needed)."""
from dataclasses import replace

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
