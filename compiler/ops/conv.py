"""Conv and ConvTranspose (N-d, groups, dilations, explicit or automatic padding)."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import accumulate, given_inputs, result, tuple_shape, widen
from .registry import Op, register_op
from .windows import BEGIN_END, PER_AXIS, list_attr, out_lens, window_attrs, windows


def kernel_shape(node, weight: int = 1) -> list[int]:
    """The kernel_shape attribute or, where it is omitted, the spatial lengths of the weight
    (input ``weight``)."""
    return [int(k) for k in node.attrs.get("kernel_shape") or list(node.input(weight).shape.lens[2:])]


def conv_attrs(node, weight: int = 1) -> dict:
    """Window attributes and group of a convolution whose weight is input ``weight``."""
    attrs = window_attrs(node, kernel_shape(node, weight), node.input(0).shape.lens[2:])
    attrs["group"] = int(node.attrs.get("group", 1))
    return attrs


@register_op
class Conv(Op):
    name = "Conv"

    def from_onnx(self, node):
        return conv_attrs(node), node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, w = inputs[0], inputs[1]
        return Shape(x.dtype, (x.lens[0], w.lens[0], *out_lens(attrs, x.lens[2:])))

    def compute(self, attrs, x, w, b=None):
        dtype = x.dtype
        x, w = accumulate(x), accumulate(w)
        nd, g = x.ndim - 2, attrs["group"]
        win = windows(x, attrs, 0)                       # (N, C, *out, *kernel)
        cg, mg = x.shape[1] // g, w.shape[0] // g
        kernel_axes = list(range(2 + nd, 2 + 2 * nd))
        parts = []
        for k in range(g):
            part = np.tensordot(win[:, k * cg:(k + 1) * cg], w[k * mg:(k + 1) * mg],
                                axes=([1] + kernel_axes, [1] + list(range(2, 2 + nd))))  # (N, *out, mg)
            parts.append(np.moveaxis(part, -1, 1))
        y = np.concatenate(parts, axis=1)
        if b is not None:
            y = y + accumulate(b).reshape((1, -1) + (1,) * nd)
        return result(y, dtype)


@register_op
class ConvTranspose(Op):
    name = "ConvTranspose"

    def from_onnx(self, node):
        x = node.input(0).shape
        nd = x.ndim - 2
        kernel = kernel_shape(node)
        a = node.attrs
        if len(kernel) != nd:
            raise ValueError(f"attribute 'kernel_shape' is {kernel}; expected {nd} value(s), {PER_AXIS}")
        strides = list_attr(node, "strides", nd, 1, 1)
        dilations = list_attr(node, "dilations", nd, 1, 1)
        out_pad = list_attr(node, "output_padding", nd, 0, 0)
        pads = list_attr(node, "pads", 2 * nd, 0, 0, BEGIN_END)
        auto_pad = a.get("auto_pad", "NOTSET") or "NOTSET"
        out_shape = a.get("output_shape")
        if out_shape is not None:
            out_shape = [int(n) for n in out_shape][-nd:]
        if x.lens[2:].count(None) and (out_shape is not None or auto_pad.startswith("SAME")):
            node.unsupported("output_shape/auto_pad with run-time spatial lengths")
        if auto_pad.startswith("SAME") and out_shape is None:
            out_shape = [x.lens[2 + k] * strides[k] for k in range(nd)]
        if out_shape is not None:
            for k in range(nd):
                full = strides[k] * (x.lens[2 + k] - 1) + out_pad[k] + (kernel[k] - 1) * dilations[k] + 1
                total = full - out_shape[k]
                if total < 0:  # a larger output_shape than the taps cover: pad at the end
                    out_pad[k] -= total
                    total = 0
                if auto_pad == "SAME_UPPER":
                    pads[k], pads[k + nd] = total // 2, total - total // 2
                else:
                    pads[k], pads[k + nd] = total - total // 2, total // 2
        elif auto_pad == "VALID":
            pads = [0] * (2 * nd)
        return {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads,
                "output_padding": out_pad, "group": int(a.get("group", 1))}, node.present_inputs()

    @staticmethod
    def spatial(attrs, lens):
        nd = len(attrs["kernel_shape"])
        out = []
        for k in range(nd):
            if lens[k] is None:
                out.append(None)
                continue
            out.append(attrs["strides"][k] * (lens[k] - 1) + attrs["output_padding"][k]
                       + (attrs["kernel_shape"][k] - 1) * attrs["dilations"][k] + 1
                       - attrs["pads"][k] - attrs["pads"][k + nd])
        return out

    def shape(self, attrs, inputs, literals):
        x, w = inputs[0], inputs[1]
        return Shape(x.dtype, (x.lens[0], w.lens[1] * attrs["group"], *self.spatial(attrs, x.lens[2:])))

    def compute(self, attrs, x, w, b=None):
        dtype = x.dtype
        x, w = accumulate(x), accumulate(w)
        nd, g = x.ndim - 2, attrs["group"]
        s, d, p = attrs["strides"], attrs["dilations"], attrs["pads"]
        kernel = w.shape[2:]
        cg, mg = x.shape[1] // g, w.shape[1]
        outs = self.spatial(attrs, x.shape[2:])
        # Scatter every kernel tap into an output large enough for pads and output_padding.
        full = [max(s[k] * (x.shape[2 + k] - 1) + (kernel[k] - 1) * d[k] + 1, p[k] + outs[k]) for k in range(nd)]
        y = np.zeros((x.shape[0], mg * g, *full), dtype=x.dtype)
        for k in range(g):
            xg = x[:, k * cg:(k + 1) * cg]
            for tap in np.ndindex(*kernel):
                wk = w[k * cg:(k + 1) * cg, :, *tap]                      # (cg, mg)
                contrib = np.moveaxis(np.tensordot(xg, wk, axes=([1], [0])), -1, 1)  # (N, mg, *in)
                where = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (x.shape[2 + i] - 1) * s[i] + 1, s[i])
                              for i in range(nd))
                y[(slice(None), slice(k * mg, (k + 1) * mg)) + where] += contrib
        y = y[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + outs[i]) for i in range(nd))]
        if b is not None:
            y = y + accumulate(b).reshape((1, -1) + (1,) * nd)
        return result(y, dtype)


@register_op
class CausalConvWithState(Op):
    """Depthwise causal 1-d convolution over (batch, channels, length) that continues from a
    past state (the previous k-1 inputs, zeros when absent); returns the output and the new
    state; optional SiLU activation."""

    name = "CausalConvWithState"
    inputs_names = ["input", "weight", "bias", "past_state"]

    def from_onnx(self, node):
        present, inputs = given_inputs(node, self.inputs_names)
        activation = node.attrs.get("activation", "none")
        if activation not in ("none", "silu", "swish"):
            node.unsupported(f"activation {activation!r}")
        return {"inputs": present, "activation": activation}, inputs

    def shape(self, attrs, inputs, literals):
        x, w = inputs[0], inputs[1]
        k = w.lens[2]
        return tuple_shape(x, Shape(x.dtype, (x.lens[0], x.lens[1], k - 1)))

    def compute(self, attrs, *args):
        v = dict(zip(attrs["inputs"], args))
        x, w = v["input"], v["weight"]
        k = w.shape[2]
        past = v.get("past_state")
        if past is None:
            past = np.zeros(x.shape[:2] + (k - 1,), dtype=x.dtype)
        padded = np.concatenate([past, x], axis=2)
        conv_attrs = {"kernel_shape": [k], "strides": [1], "dilations": [1], "pads": [0, 0], "group": x.shape[1]}
        y = Conv().compute(conv_attrs, padded, w, v.get("bias"))
        if attrs["activation"] != "none":
            yf = y.astype(np.float32)
            y = (yf / (1 + np.exp(-yf))).astype(x.dtype)
        return y, padded[:, :, padded.shape[2] - (k - 1):]


def _bilinear_zero(x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """x (N, C, H, W) sampled at per-channel pixel positions y, xs (N, C, OH, OW); samples
    outside the image read zeros."""
    n, c, h, w = x.shape
    y0, x0 = np.floor(y), np.floor(xs)
    out = np.zeros(y.shape)
    bn = np.arange(n).reshape(n, 1, 1, 1)
    bc = np.arange(c).reshape(1, c, 1, 1)
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            weight = (1 - np.abs(y - yy)) * (1 - np.abs(xs - xx))
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            values = x[bn, bc, np.clip(yy, 0, h - 1).astype(np.int64), np.clip(xx, 0, w - 1).astype(np.int64)]
            out += np.where(inside, values * weight, 0.0)
    return out


@register_op
class DeformConv(Op):
    """2-d deformable convolution: each kernel tap reads the input at its position moved by a
    learned offset (bilinear, zeros outside), optionally scaled by a mask."""

    name = "DeformConv"
    names = ["X", "W", "offset", "B", "mask"]

    def from_onnx(self, node):
        x = node.input(0).shape
        if x.ndim != 4:
            node.unsupported("only 2-d deformable convolution")
        attrs = window_attrs(node, kernel_shape(node), x.lens[2:])
        present, inputs = given_inputs(node, self.names)
        attrs.update(group=int(node.attrs.get("group", 1)), offset_group=int(node.attrs.get("offset_group", 1)),
                     inputs=present)
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x, w = inputs[0], inputs[1]
        return Shape(x.dtype, (x.lens[0], w.lens[0], *out_lens(attrs, x.lens[2:])))

    def compute(self, attrs, *args):
        v = dict(zip(attrs["inputs"], args))
        x, w = widen(v["X"]).astype(np.float64), widen(v["W"]).astype(np.float64)
        n, c = x.shape[:2]
        oc, kh, kw = w.shape[0], *attrs["kernel_shape"]
        oh, ow = out_lens(attrs, x.shape[2:])
        og, g = attrs["offset_group"], attrs["group"]
        offset = widen(v["offset"]).astype(np.float64).reshape(n, og, kh, kw, 2, oh, ow)
        mask = np.ones((n, og, kh, kw, oh, ow)) if "mask" not in v else \
            widen(v["mask"]).astype(np.float64).reshape(n, og, kh, kw, oh, ow)
        sh, sw = attrs["strides"]
        dh, dw = attrs["dilations"]
        base_y = (-attrs["pads"][0] + sh * np.arange(oh)).reshape(oh, 1)
        base_x = (-attrs["pads"][1] + sw * np.arange(ow)).reshape(1, ow)
        per_offset = c // og
        icg, ocg = c // g, oc // g
        y_out = np.zeros((n, oc, oh, ow))
        for a in range(kh):
            for b in range(kw):
                ys = np.repeat(base_y + a * dh + offset[:, :, a, b, 0], per_offset, axis=1)
                xs = np.repeat(base_x + b * dw + offset[:, :, a, b, 1], per_offset, axis=1)
                sampled = _bilinear_zero(x, ys, xs) * np.repeat(mask[:, :, a, b], per_offset, axis=1)
                for k in range(g):
                    y_out[:, k * ocg:(k + 1) * ocg] += np.einsum(
                        "nchw,oc->nohw", sampled[:, k * icg:(k + 1) * icg], w[k * ocg:(k + 1) * ocg, :, a, b])
        if "B" in v:
            y_out += widen(v["B"]).astype(np.float64).reshape(1, -1, 1, 1)
        return result(y_out, v["X"].dtype)
