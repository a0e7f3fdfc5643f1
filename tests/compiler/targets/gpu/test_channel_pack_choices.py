"""What the channels-last kernels that move several channels a thread choose, checked without a
GPU: the pool's channel pack, which convolutions run with padded channels, and the pointwise
kernel's reading of a channel slice as strided rows. On a GPU: test_channel_packs.py."""
import numpy as np

from compiler.targets.gpu.conv_pad_channels import PADDED_CHANNELS, pad_weights, padded, padded_channels
from compiler.targets.gpu.kernels.conv_spec import ConvSpec
from compiler.targets.gpu.kernels.pointwise_flat import Rows, layout, source, vector_loads
from compiler.targets.gpu.kernels.pool import channel_pack

from tests.compiler.targets.gpu.test_pointwise_flat import GELU, _typed


def test_pools_take_the_widest_aligned_pack_that_divides_the_channels():
    assert channel_pack(64, 2, 256) == 8 and channel_pack(64, 4, 256) == 4 and channel_pack(64, 8, 256) == 2
    assert channel_pack(12, 2, 256) == 4 and channel_pack(6, 2, 256) == 2 and channel_pack(3, 2, 256) == 1
    assert channel_pack(64, 2, 256 + 4) == 2           # a start 4 bytes into a 16-byte word


def _spec(channels, dtype="float16", group=1, nhwc=True):
    return ConvSpec((4, channels, 32, 32), (64, channels // group, 7, 7), (3, 3), (3, 3), (2, 2), (1, 1), group,
                    dtype, bias=True, relu=True, nhwc=nhwc)


def test_only_ungrouped_channels_last_fp16_convolutions_over_few_channels_are_padded():
    assert padded_channels(_spec(3)) == PADDED_CHANNELS and padded_channels(_spec(1)) == PADDED_CHANNELS
    assert padded_channels(_spec(PADDED_CHANNELS)) == PADDED_CHANNELS and padded_channels(_spec(64)) == 64
    assert padded_channels(_spec(3, "float32")) == 3 and padded_channels(_spec(3, nhwc=False)) == 3
    assert padded_channels(_spec(2, group=2)) == 2
    assert padded_channels(ConvSpec((4, 3, 32, 32), (64, 3, 7, 7), (3, 3), (3, 3), (2, 2), (1, 1), 1, "float16",
                                    bias=True, residual=True, nhwc=True)) == 3


def test_a_padded_spec_keeps_everything_but_the_channels():
    spec = _spec(3)
    wide = padded(spec)
    assert wide.x_shape == (4, PADDED_CHANNELS, 32, 32) and wide.w_shape == (64, PADDED_CHANNELS, 7, 7)
    assert wide.out_shape == spec.out_shape and (wide.bias, wide.relu, wide.nhwc) == (True, True, True)
    wide_enough = _spec(64)
    assert padded(wide_enough) is wide_enough


def test_padded_weights_add_zero_channels():
    w = np.arange(2 * 3 * 3 * 3, dtype=np.float16).reshape(2, 3, 3, 3)      # (K, kh, kw, C)
    wide = pad_weights(np, w, 8)
    assert wide.shape == (2, 3, 3, 8) and (wide[..., :3] == w).all() and not wide[..., 3:].any()


def test_a_channel_slice_of_a_wider_channels_last_buffer_reads_as_strided_rows():
    block = np.zeros((2, 5, 6, 40), dtype=np.float16)                      # (N, H, W, C) of a block
    assert layout(block[..., :24], (2, 5, 6, 24)) == Rows(24, 40)
    assert layout(block[:, :, :3, :24], (2, 5, 3, 24)) is None              # W cut too: not one row axis
    assert layout(block[..., 1:25], (2, 5, 6, 24)) == Rows(24, 40)
    assert vector_loads(block[..., :24], Rows(24, 40)) and not vector_loads(block[..., :22], Rows(22, 40))
    assert not vector_loads(block[..., 1:25], Rows(24, 40))                 # starts inside an 8-byte word


def test_source_reads_strided_rows_by_row_and_column():
    _name, text = source(_typed(GELU, "float16"), ["float16", "float16"], [Rows(24, 40), 24], (True, False))
    assert "unsigned int c0, unsigned int s0" in text and "(i0 / c0) * s0 + i0 % c0" in text
    assert "in0[(i / c0) * s0 + i % c0]" in text and "in1[i % m1]" in text
