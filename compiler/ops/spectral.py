"""Signal processing: window functions (Hann, Hamming, Blackman), DFT, STFT, MelWeightMatrix."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import fold_inputs, result, run_values, scalar_int, widen
from .registry import Op, register_op


class Window(Op):
    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        return {"periodic": int(node.attrs.get("periodic", 1)),
                "dtype": dtype_name(int(node.attrs.get("output_datatype", 1)))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        n = None if literals[0] is None else scalar_int(literals[0])
        return Shape(attrs["dtype"], (n,))

    def compute(self, attrs, size):
        n = scalar_int(size)
        denominator = n if attrs["periodic"] else n - 1
        phase = 2 * np.pi * np.arange(n) / denominator
        return self.window(phase).astype(attrs["dtype"])


@register_op
class HannWindow(Window):
    name = "HannWindow"

    def window(self, phase):
        return 0.5 - 0.5 * np.cos(phase)


@register_op
class HammingWindow(Window):
    name = "HammingWindow"

    def window(self, phase):
        return 25 / 46 - (1 - 25 / 46) * np.cos(phase)


@register_op
class BlackmanWindow(Window):
    name = "BlackmanWindow"

    def window(self, phase):
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)


def _as_complex(x):
    """A real signal (last dimension 1) or a complex one (last dimension 2) as complex, in the
    input's precision (so float32 signals transform in single precision, as the reference's)."""
    x = widen(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    real = x[..., 0]
    return real + 1j * x[..., 1] if x.shape[-1] == 2 else real + 0j


def _as_pairs(z):
    return np.stack([z.real, z.imag], axis=-1)


def _int_or_none(value):
    """An empty tensor stands for an omitted optional input."""
    return None if np.asarray(value).size == 0 else scalar_int(value)


@register_op
class DFT(Op):
    """Discrete Fourier transform along ``axis`` (an input since opset 20); the last dimension
    holds (real) or (real, imaginary). Inverse one-sided transforms give real signals."""

    name = "DFT"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["length", "axis"], convert=_int_or_none)
        if node.opset < 20:
            attrs["axis"] = int(node.attrs.get("axis", 1))
        elif node.input(2) is None:
            attrs["axis"] = -2
        attrs["rank"] = node.input(0).shape.ndim
        attrs["inverse"] = int(node.attrs.get("inverse", 0))
        attrs["onesided"] = int(node.attrs.get("onesided", 0))
        return attrs, inputs

    def _axis(self, attrs, axis):
        # Since opset 20 a negative axis counts from the end of the whole input; before, the
        # axis never counted the trailing (real, imaginary) dimension.
        return axis + attrs["rank"] if axis < 0 else axis

    def out_len(self, attrs, n_in, length):
        if attrs["inverse"] and attrs["onesided"]:
            return length or (None if n_in is None else 2 * (n_in - 1))
        n = length or n_in
        return n // 2 + 1 if attrs["onesided"] and n is not None else n

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if "axis" in attrs.get("dynamic", ()):
            return Shape(x.dtype, [None] * (x.ndim - 1) + [None])
        lens = list(x.lens)
        a = self._axis(attrs, attrs["axis"])
        length = None if "length" in attrs.get("dynamic", ()) else attrs["length"]
        lens[a] = None if "length" in attrs.get("dynamic", ()) else self.out_len(attrs, lens[a], length)
        lens[-1] = 1 if attrs["inverse"] and attrs["onesided"] else 2
        return Shape(x.dtype, lens)

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, ["length", "axis"], convert=_int_or_none)
        a = self._axis(attrs, v["axis"])
        z = _as_complex(x)
        n = v["length"] or z.shape[a]
        if attrs["inverse"] and attrs["onesided"]:
            return result(np.fft.irfft(z, n=v["length"] or 2 * (z.shape[a] - 1), axis=a)[..., None], x.dtype)
        y = np.fft.ifft(z, n=n, axis=a) if attrs["inverse"] else np.fft.fft(z, n=n, axis=a)
        if attrs["onesided"]:
            y = np.take(y, np.arange(n // 2 + 1), axis=a)
        return result(_as_pairs(y), x.dtype)


@register_op
class STFT(Op):
    """Short-time Fourier transform of (batch, samples, 1|2) signals. Inputs: the signal, the
    window when given, then frame_step/frame_length when they are run-time values."""

    name = "STFT"

    def from_onnx(self, node):
        inputs = [node.input(0)] + ([node.input(2)] if node.input(2) is not None else [])
        attrs = {"window": node.input(2) is not None, "onesided": int(node.attrs.get("onesided", 1))}
        dynamic = []
        for key, k in (("step", 1), ("length", 3)):
            value = node.literal(k)
            attrs[key] = None if value is None or value.size == 0 else scalar_int(value)
            if value is None and node.input(k) is not None:
                dynamic.append(key)
                inputs.append(node.input(k))
        attrs["dynamic"] = dynamic
        return attrs, inputs

    def values(self, attrs, args):
        first = 2 if attrs["window"] else 1
        v = {"step": attrs["step"], "length": attrs["length"]}
        for key, value in zip(attrs["dynamic"], args[first:]):
            v[key] = scalar_int(value)
        return v, (args[1] if attrs["window"] else None)

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        n = attrs["length"] or (inputs[1].lens[0] if attrs["window"] else None)
        if attrs["dynamic"] or n is None:
            return Shape(x.dtype, (x.lens[0], None, None, 2))
        frames = (x.lens[1] - n) // attrs["step"] + 1
        return Shape(x.dtype, (x.lens[0], frames, n // 2 + 1 if attrs["onesided"] else n, 2))

    def compute(self, attrs, x, *args):
        v, window = self.values(attrs, (x, *args))
        n = v["length"] or window.shape[0]
        z = _as_complex(x)
        frames = (z.shape[1] - n) // v["step"] + 1
        w = np.ones(n) if window is None else widen(window)
        pieces = np.stack([z[:, f * v["step"]:f * v["step"] + n] * w for f in range(frames)], axis=1)
        y = np.fft.fft(pieces, axis=-1)
        if attrs["onesided"]:
            y = y[..., :n // 2 + 1]
        return result(_as_pairs(y), x.dtype)


@register_op
class MelWeightMatrix(Op):
    """Triangular mel filter bank mapping (dft_length // 2 + 1) bins to num_mel_bins."""

    name = "MelWeightMatrix"

    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        return {"dtype": dtype_name(int(node.attrs.get("output_datatype", 1)))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        if all(v is not None for v in literals[:2]):
            return Shape(attrs["dtype"], (scalar_int(literals[1]) // 2 + 1, scalar_int(literals[0])))
        return Shape(attrs["dtype"], (None, None))

    def compute(self, attrs, num_mel_bins, dft_length, sample_rate, lower_hz, upper_hz):
        bins, n, rate = scalar_int(num_mel_bins), scalar_int(dft_length), scalar_int(sample_rate)
        lo, hi = float(np.asarray(lower_hz).reshape(-1)[0]), float(np.asarray(upper_hz).reshape(-1)[0])

        def mel(hz):
            return 2595 * np.log10(1 + hz / 700)

        # bins + 2 edges spaced by (high - low) / (bins + 2) mels, as onnx's reference has it.
        step = (mel(hi) - mel(lo)) / (bins + 2)
        hz = 700 * (10 ** ((mel(lo) + np.arange(bins + 2) * step) / 2595) - 1)
        edges = (((n + 1) * hz) // rate).astype(np.int64)
        out = np.zeros((n // 2 + 1, bins))
        for m in range(bins):
            left, centre, right = edges[m], edges[m + 1], edges[m + 2]
            if centre > left:
                out[left:centre + 1, m] = (np.arange(left, centre + 1) - left) / (centre - left)
            out[centre, m] = 1
            if right > centre:
                out[centre:right, m] = (right - np.arange(centre, right)) / (right - centre)
        return out.astype(attrs["dtype"])
