"""Depthwise 2-D convolution (one filter per channel: MobileNet, EfficientNet) as a sum over
kernel taps of shifted input views times per-channel weights. im2col would build a k*k times
larger buffer and then run one 1-row matrix product per channel. Where numba is importable the
taps are one compiled loop over the output (``depthwise_jit``); else two NumPy calls per tap
into buffers kept between runs. Channels are split over the cpu target's threads when the work
is large enough."""
from __future__ import annotations

import numpy as np

from ..threads import MIN_PARALLEL_MACS, parts_for, run_chunks, split
from .common import output_buffer, padder
from .pointwise import jit_enabled, jitted


def depthwise_conv(lens, out_lens, weights, attrs, dtype):
    """A function ``(x, bias) -> y`` for x of ``lens``; ``weights``: (C, kh, kw); ``bias``: (C,) or None."""
    n, c, h, w = lens
    oh, ow = out_lens
    kh, kw = attrs["kernel_shape"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    pad = padder(lens, (top, left, bottom, right), 0, dtype)
    buffer = output_buffer((n, c, oh, ow), dtype)
    chunks = split(c, parts_for(n * c * oh * ow * kh * kw, MIN_PARALLEL_MACS))
    zero = np.zeros(c, dtype)
    if jit_enabled():
        return _compiled(lens, (n, c, oh, ow), weights, attrs, buffer, chunks, zero)
    scratch = output_buffer((n, c, oh, ow), dtype)
    taps = [(i, j, np.ascontiguousarray(weights[:, i, j]).reshape(1, c, 1, 1)) for i in range(kh) for j in range(kw)]

    def view(xp, i, j):
        return xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]

    def part(xp, y, tmp, s):
        i, j, wt = taps[0]
        np.multiply(view(xp, i, j)[:, s], wt[:, s], out=y[:, s])
        for i, j, wt in taps[1:]:
            np.multiply(view(xp, i, j)[:, s], wt[:, s], out=tmp[:, s])
            y[:, s] += tmp[:, s]

    def run(x, bias):
        xp, y, tmp = pad(x), buffer(), scratch()
        run_chunks(lambda s: part(xp, y, tmp, s), chunks)
        if bias is not None:
            y += bias.reshape(1, c, 1, 1)
        return y
    return run


# Output rows at least this long take a row-wise loop; shorter ones the channels-last one.
MIN_ROW = 16


def _compiled(lens, out_lens, weights, attrs, buffer, chunks, zero):
    channels_taps, rows_taps = jitted("depthwise_jit", "channels_taps"), jitted("depthwise_jit", "rows_taps")
    strided_rows_taps = jitted("depthwise_jit", "strided_rows_taps")
    n, c, h, w = lens
    top, left, bottom, right = attrs["pads"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    dtype = weights.dtype
    if out_lens[3] >= MIN_ROW:
        pad = padder(lens, (top, left, bottom, right), 0, dtype)
        if sh == sw == 1:
            part = lambda xp, b, y, s: rows_taps(xp[:, s], weights[s], b[s], y[:, s], dh, dw)  # noqa: E731
        else:
            part = lambda xp, b, y, s: strided_rows_taps(  # noqa: E731
                xp[:, s], weights[s], b[s], y[:, s], sh, sw, dh, dw)

        def rows(x, bias):
            xp, y = pad(x), buffer()
            b = zero if bias is None else bias
            run_chunks(lambda s: part(xp, b, y, s), chunks)
            return y
        return rows
    wt = np.ascontiguousarray(weights.transpose(1, 2, 0))
    scratch = [(np.zeros((n, h + top + bottom, w + left + right, s.stop - s.start), dtype),
                np.empty(s.stop - s.start, dtype)) for s in chunks]
    jobs = list(zip(chunks, scratch))

    def pixels(x, bias):
        y = buffer()
        b = zero if bias is None else bias

        def job(item):
            s, (xp, acc) = item
            channels_taps(x[:, s], wt[:, :, s], b[s], y[:, s], sh, sw, dh, dw, top, left, xp, acc)
        run_chunks(job, jobs)
        return y
    return pixels
