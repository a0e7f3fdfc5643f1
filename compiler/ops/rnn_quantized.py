"""ONNX Runtime's DynamicQuantizeLSTM (domain com.microsoft, what its dynamic quantizer makes of an
LSTM): int8/uint8 weights, and the inputs and each step's hidden state quantized to uint8 by
their own range before an integer product, as ONNX Runtime's kernel does, so the results agree
with it rather than with the float LSTM the weights came from."""
from __future__ import annotations

import numpy as np

from .quantize import dynamic_uint8
from .registry import register_op
from .rnn import LSTM, _bias


def quantized_product(a: np.ndarray, weights: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """a (rows, K) float @ weights (K, N) int8/uint8: ``a`` quantized to uint8 over its whole
    range by DynamicQuantizeLinear's rule (ONNX Runtime's kernel takes a scale of 1 where every
    value is 0, with the same all-zero product), the product in integers, scaled back by both
    scales (per column where the weights' scale is)."""
    quantized, a_scale, a_zero = dynamic_uint8(a.astype(np.float32))
    centered = weights.astype(np.int64) - zero_point.astype(np.int64).reshape(-1)
    product = ((quantized.astype(np.int64) - int(a_zero)) @ centered).astype(np.float32)
    return product * (a_scale * scale.astype(np.float32).reshape(-1))


@register_op
class DynamicQuantizeLSTM(LSTM):
    """LSTM's import and cell (its hidden_size is an attribute, its weights quantized): the
    products differ."""

    name = "DynamicQuantizeLSTM"
    domain = "com.microsoft"
    input_names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P",
                   "W_scale", "W_zero_point", "R_scale", "R_zero_point"]

    def direction_params(self, v: dict, d: int) -> dict:
        params = {k: (v[k][d].astype(np.float32) if v.get(k) is not None else None) for k in ("B", "P")}
        for k in ("W", "R"):
            params[k] = v[k][d]
            params[k + "_scale"] = _per_direction(v[k + "_scale"], d)
            params[k + "_zero_point"] = _per_direction(v[k + "_zero_point"], d)
        return params

    def run_direction(self, attrs, x, lens, reverse, init, acts, params, h):
        # Every step's input product at once, over the whole sequence (one quantization range),
        # as ONNX Runtime computes it.
        seq, batch = x.shape[:2]
        projected = quantized_product(x.reshape(seq * batch, -1), params["W"], params["W_scale"],
                                      params["W_zero_point"]).reshape(seq, batch, -1)
        return super().run_direction(attrs, projected, lens, reverse, init, acts, params, h)

    def step(self, attrs, xt, state, acts, params, h):
        """``xt`` is the step's input product already (``run_direction``)."""
        wb, rb = _bias(params, 4, h)
        recurrent = quantized_product(state[0], params["R"], params["R_scale"], params["R_zero_point"])
        return self.cell(attrs, xt + recurrent + wb + rb, state[1], acts, params["P"], h)


def _per_direction(p: np.ndarray, d: int) -> np.ndarray:
    """A scale or zero point of one direction: shape (dirs,) or (dirs, 4H)."""
    return p[d] if p.ndim else p
