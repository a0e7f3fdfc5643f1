"""Fused pointwise kernels run over permuted (channels-last) operands in memory order."""
import numpy as np


def test_memory_order_finds_channels_last_and_nothing_else():
    from compiler.targets.gpu.kernels.pointwise import memory_order
    x = np.zeros((2, 5, 6, 3)).transpose(0, 3, 1, 2)           # logical NCHW, stored NHWC
    assert memory_order(x) == (0, 2, 3, 1)
    assert memory_order(np.zeros((2, 3, 5, 6))) is None        # already in logical order
    assert memory_order(np.zeros((2, 3, 10, 6))[:, :, ::2]) is None   # strided: no packed order
