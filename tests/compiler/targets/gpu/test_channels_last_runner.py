"""The runner our channels-last convolution kernels share (``depthwise_conv.channels_last_runner``),
checked without a GPU: NumPy stands in for CuPy and a NumPy convolution for the kernel, which gets
the input, weights, bias and residual exactly as a kernel would (packed channels-last, weights
(KH, KW, C / group, K) fp32). The kernels themselves: test_depthwise.py, test_grouped.py."""
import numpy as np
import pytest

from compiler.ops.registry import get_op
from compiler.targets.gpu.depthwise_conv import channels_last_runner
from compiler.targets.gpu.kernels.conv import ConvSpec
from compiler.targets.gpu.ops_nn import to_nhwc

CONV = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 2], "dilations": [1, 1]}


def _numpy_kernel(spec, launches):
    def launch(x, w_taps, b, r, y):
        for a in (x, w_taps, y) + tuple(v for v in (b, r) if v is not None):
            assert a.flags.c_contiguous
        assert w_taps.dtype == np.float32 and w_taps.shape == (3, 3, spec.w_shape[1], spec.w_shape[0])
        conv = get_op("Conv").compute({**CONV, "group": spec.group}, x.transpose(0, 3, 1, 2),
                                      w_taps.transpose(3, 2, 0, 1), b)
        if r is not None:
            conv = conv + r.transpose(0, 3, 1, 2)
        y[...] = conv.transpose(0, 2, 3, 1)
        launches.append(1)
    return launch


@pytest.mark.parametrize("group, cin, cout", [(6, 6, 6), (3, 12, 9)], ids=["depthwise", "grouped"])
def test_runner_hands_the_kernel_channels_last_operands_and_returns_logical_nchw(group, cin, cout):
    rng = np.random.default_rng(3)
    spec = ConvSpec((2, cin, 7, 8), (cout, cin // group, 3, 3), (1, 0), (1, 2), (2, 2), (1, 1), group,
                    "float32", bias=True, residual=True, nhwc=True)
    x = rng.standard_normal(spec.x_shape).astype(np.float32)
    w = rng.standard_normal(spec.w_shape).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    r = rng.standard_normal(spec.out_shape).astype(np.float32)
    launches = []
    run = channels_last_runner(np, spec, to_nhwc, _numpy_kernel(spec, launches), "test-path")
    want = get_op("Conv").compute({**CONV, "group": group}, x, w, b) + r
    for _ in range(2):     # the second run takes the weights laid out by the first
        got = run(x, w, b, r)
        assert got.shape == spec.out_shape and got.transpose(0, 2, 3, 1).flags.c_contiguous
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert run.path == "test-path" and len(launches) == 2
