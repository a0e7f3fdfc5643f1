"""Recurrent layers: RNN, GRU, LSTM (forward, reverse, bidirectional; sequence_lens; layout;
clip; custom activations), stepping through time with NumPy."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import given_inputs, result, tuple_shape, widen
from .registry import Op, register_op

# Activation functions by ONNX name, with how many of activation_alpha/beta each takes.
ACTIVATIONS = {
    "Relu": (lambda x, a, b: np.maximum(x, 0), 0, 0),
    "Tanh": (lambda x, a, b: np.tanh(x), 0, 0),
    "Sigmoid": (lambda x, a, b: 1 / (1 + np.exp(-x)), 0, 0),
    "Affine": (lambda x, a, b: a * x + b, 1, 1),
    "LeakyRelu": (lambda x, a, b: np.where(x < 0, a * x, x), 1, 0),
    "ThresholdedRelu": (lambda x, a, b: np.where(x > a, x, 0), 1, 0),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1, 1),
    "HardSigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 1, 1),
    "Elu": (lambda x, a, b: np.where(x < 0, a * (np.exp(x) - 1), x), 1, 0),
    "Softsign": (lambda x, a, b: x / (1 + np.abs(x)), 0, 0),
    "Softplus": (lambda x, a, b: np.logaddexp(0, x), 0, 0),  # no overflow for large x
}
DEFAULT_ALPHA = {"LeakyRelu": 0.01, "ThresholdedRelu": 1.0, "HardSigmoid": 0.2, "Elu": 1.0,
                 "Affine": 1.0, "ScaledTanh": 1.0}
DEFAULT_BETA = {"HardSigmoid": 0.5, "Affine": 0.0, "ScaledTanh": 1.0}


def activation_list(node, defaults: list[str], directions: int) -> list:
    """(name, alpha, beta) per activation slot, defaults per direction filled in."""
    names = node.attrs.get("activations") or defaults * directions
    alphas = list(node.attrs.get("activation_alpha") or [])
    betas = list(node.attrs.get("activation_beta") or [])
    out = []
    for name in names:
        canonical = next((k for k in ACTIVATIONS if k.lower() == name.lower()), None)
        if canonical is None:
            node.unsupported(f"activation {name!r}")
        _, na, nb = ACTIVATIONS[canonical]
        alpha = alphas.pop(0) if na and alphas else DEFAULT_ALPHA.get(canonical, 0.0)
        beta = betas.pop(0) if nb and betas else DEFAULT_BETA.get(canonical, 0.0)
        out.append([canonical, float(alpha), float(beta)])
    return out


def act(spec, x):
    name, alpha, beta = spec
    return ACTIVATIONS[name][0](x, alpha, beta)


class Recurrent(Op):
    gates = 1
    input_names = ["X", "W", "R", "B", "sequence_lens", "initial_h"]
    default_activations: list[str] = []
    outputs = 2

    def from_onnx(self, node):
        present, inputs = given_inputs(node, self.input_names)
        direction = node.attrs.get("direction", "forward")
        dirs = 2 if direction == "bidirectional" else 1
        w = node.input(1).shape
        attrs = {
            "inputs": present,
            "hidden_size": int(node.attrs.get("hidden_size", w.lens[1] // self.gates)),
            "direction": direction,
            "layout": int(node.attrs.get("layout", 0)),
            "activations": activation_list(node, self.default_activations, dirs),
            "clip": node.attrs.get("clip"),
        }
        attrs.update(self.extra_attrs(node))
        return attrs, inputs

    def extra_attrs(self, node):
        return {}

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        seq, batch = (x.lens[0], x.lens[1]) if attrs["layout"] == 0 else (x.lens[1], x.lens[0])
        dirs = 2 if attrs["direction"] == "bidirectional" else 1
        h = attrs["hidden_size"]
        if attrs["layout"] == 0:
            y, state = Shape(x.dtype, (seq, dirs, batch, h)), Shape(x.dtype, (dirs, batch, h))
        else:
            y, state = Shape(x.dtype, (batch, seq, dirs, h)), Shape(x.dtype, (batch, dirs, h))
        return tuple_shape(y, *[state] * (self.outputs - 1))

    def compute(self, attrs, *args):
        v = dict(zip(attrs["inputs"], args))
        dtype = v["X"].dtype
        layout = attrs["layout"]
        x = widen(v["X"]).astype(np.float64)
        if layout:
            x = x.transpose(1, 0, 2)
        seq, batch = x.shape[:2]
        h = attrs["hidden_size"]
        dirs = 2 if attrs["direction"] == "bidirectional" else 1
        lens = v.get("sequence_lens")
        lens = np.full(batch, seq) if lens is None else lens.astype(np.int64)
        states = {}
        for name in ("initial_h", "initial_c"):
            s = v.get(name)
            if s is not None:
                s = widen(s).astype(np.float64)
                states[name] = s.transpose(1, 0, 2) if layout else s
        ys, finals = [], []
        per_dir = len(attrs["activations"]) // dirs
        for d in range(dirs):
            reverse = attrs["direction"] == "reverse" or d == 1
            init = {k: s[d] for k, s in states.items()}
            acts = attrs["activations"][d * per_dir:(d + 1) * per_dir]
            params = self.direction_params(v, d)
            y, final = self.run_direction(attrs, x, lens, reverse, init, acts, params, h)
            ys.append(y)
            finals.append(final)
        y = np.stack(ys, axis=1)                                   # (seq, dirs, batch, h)
        outs = [y] + [np.stack([f[k] for f in finals]) for k in range(self.outputs - 1)]
        if layout:
            outs = [outs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]
        return tuple(result(o, dtype) for o in outs)

    def direction_params(self, v: dict, d: int) -> dict:
        """Direction ``d``'s weights, biases and peepholes, in float64."""
        return {k: (widen(v[k][d]).astype(np.float64) if v.get(k) is not None else None)
                for k in ("W", "R", "B", "P")}

    def run_direction(self, attrs, x, lens, reverse, init, acts, params, h):
        seq, batch = x.shape[:2]
        state = self.initial_state(init, batch, h)
        y = np.zeros((seq, batch, h))
        steps = range(seq - 1, -1, -1) if reverse else range(seq)
        for t in steps:
            valid = (t < lens)[:, None]
            new = self.step(attrs, x[t], state, acts, params, h)
            state = [np.where(valid, n, s) for n, s in zip(new, state)]
            y[t] = np.where(valid, state[0], 0)
        return y, state

    def initial_state(self, init, batch, h):
        return [init.get("initial_h", np.zeros((batch, h)))]


def _clip(attrs, z):
    return z if attrs["clip"] is None else np.clip(z, -attrs["clip"], attrs["clip"])


def _bias(params, gates, h):
    b = params["B"]
    if b is None:
        return np.zeros(gates * h), np.zeros(gates * h)
    return b[:gates * h], b[gates * h:]


@register_op
class RNN(Recurrent):
    name = "RNN"
    gates = 1
    default_activations = ["Tanh"]

    def step(self, attrs, xt, state, acts, params, h):
        wb, rb = _bias(params, 1, h)
        z = xt @ params["W"].T + state[0] @ params["R"].T + wb + rb
        return [act(acts[0], _clip(attrs, z))]


@register_op
class GRU(Recurrent):
    name = "GRU"
    gates = 3
    default_activations = ["Sigmoid", "Tanh"]

    def extra_attrs(self, node):
        return {"linear_before_reset": int(node.attrs.get("linear_before_reset", 0))}

    def step(self, attrs, xt, state, acts, params, h):
        f, g = acts
        hprev = state[0]
        w, r = params["W"], params["R"]
        wb, rb = _bias(params, 3, h)
        xw = xt @ w.T + wb                          # (batch, 3h): z, r, h parts
        z = act(f, _clip(attrs, xw[:, :h] + hprev @ r[:h].T + rb[:h]))
        reset = act(f, _clip(attrs, xw[:, h:2 * h] + hprev @ r[h:2 * h].T + rb[h:2 * h]))
        if attrs["linear_before_reset"]:
            cand = xw[:, 2 * h:] + reset * (hprev @ r[2 * h:].T + rb[2 * h:])
        else:
            cand = xw[:, 2 * h:] + (reset * hprev) @ r[2 * h:].T + rb[2 * h:]
        cand = act(g, _clip(attrs, cand))
        return [(1 - z) * cand + z * hprev]


@register_op
class LSTM(Recurrent):
    name = "LSTM"
    gates = 4
    input_names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    default_activations = ["Sigmoid", "Tanh", "Tanh"]
    outputs = 3

    def extra_attrs(self, node):
        return {"input_forget": int(node.attrs.get("input_forget", 0))}

    def initial_state(self, init, batch, h):
        return [init.get("initial_h", np.zeros((batch, h))), init.get("initial_c", np.zeros((batch, h)))]

    def step(self, attrs, xt, state, acts, params, h):
        wb, rb = _bias(params, 4, h)
        z = xt @ params["W"].T + state[0] @ params["R"].T + wb + rb   # gates i, o, f, c
        return self.cell(attrs, z, state[1], acts, params["P"], h)

    def cell(self, attrs, z, cprev, acts, p, h):
        """The new (h, c) from the gates' pre-activations ``z`` (i, o, f, c) and peepholes ``p``."""
        f, g, hact = acts
        p = p if p is not None else np.zeros(3 * h)
        i = act(f, _clip(attrs, z[:, :h] + p[:h] * cprev))
        if attrs["input_forget"]:
            fg = 1 - i
        else:
            fg = act(f, _clip(attrs, z[:, 2 * h:3 * h] + p[2 * h:] * cprev))
        c = fg * cprev + i * act(g, _clip(attrs, z[:, 3 * h:]))
        o = act(f, _clip(attrs, z[:, h:2 * h] + p[h:2 * h] * c))
        return [o * act(hact, c), c]
