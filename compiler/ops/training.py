"""Optimizer steps of the ai.onnx.preview.training domain: Adagrad, Adam, Momentum. Inputs are
R (learning rate), T (step count), then one group per optimized tensor (X..., G..., states...)."""
from __future__ import annotations

import numpy as np

from .common import tuple_shape, widen
from .registry import Op, register_op

TRAINING = "ai.onnx.preview.training"


class Optimizer(Op):
    domain = TRAINING
    states = 1  # state tensors per optimized tensor (besides X and G)
    defaults: dict = {}

    def from_onnx(self, node):
        attrs = {k: node.attrs.get(k, v) for k, v in self.defaults.items()}
        return attrs, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        n = (len(inputs) - 2) // (2 + self.states)
        xs = inputs[2:2 + n]
        states = inputs[2 + 2 * n:]
        return tuple_shape(*xs, *states)

    def compute(self, attrs, r, t, *groups):
        n = len(groups) // (2 + self.states)
        xs, gs = groups[:n], groups[n:2 * n]
        states = [groups[2 * n + k * n:2 * n + (k + 1) * n] for k in range(self.states)]
        new_x, new_states = [], [[] for _ in range(self.states)]
        for i in range(n):
            x, *st = self.step(attrs, float(r), int(t), widen(xs[i]).astype(np.float64),
                               widen(gs[i]).astype(np.float64), *[widen(s[i]).astype(np.float64) for s in states])
            new_x.append(x.astype(xs[i].dtype))
            for k, value in enumerate(st):
                new_states[k].append(value.astype(states[k][i].dtype))
        return tuple(new_x) + tuple(v for group in new_states for v in group)


@register_op
class Adagrad(Optimizer):
    name = "Adagrad"
    defaults = {"decay_factor": 0.0, "epsilon": 1e-6, "norm_coefficient": 0.0}

    def step(self, a, r, t, x, g, h):
        rate = r / (1 + t * a["decay_factor"])
        g = a["norm_coefficient"] * x + g
        h = h + g * g
        return x - rate * g / (np.sqrt(h) + a["epsilon"]), h


@register_op
class Adam(Optimizer):
    name = "Adam"
    states = 2
    defaults = {"alpha": 0.9, "beta": 0.999, "epsilon": 1e-6, "norm_coefficient": 0.0, "norm_coefficient_post": 0.0}

    def step(self, a, r, t, x, g, v, h):
        g = a["norm_coefficient"] * x + g
        v = a["alpha"] * v + (1 - a["alpha"]) * g
        h = a["beta"] * h + (1 - a["beta"]) * g * g
        rate = r * np.sqrt(1 - a["beta"] ** t) / (1 - a["alpha"] ** t) if t > 0 else r
        x = x - rate * v / (np.sqrt(h) + a["epsilon"])
        return (1 - a["norm_coefficient_post"]) * x, v, h


@register_op
class Momentum(Optimizer):
    name = "Momentum"
    defaults = {"alpha": 0.0, "beta": 0.0, "mode": "standard", "norm_coefficient": 0.0}

    def step(self, a, r, t, x, g, v):
        g = a["norm_coefficient"] * x + g
        beta = a["beta"] if t > 0 else 1.0
        v = a["alpha"] * v + beta * g
        if a["mode"] == "nesterov":
            return x - r * (g + a["alpha"] * v), v
        return x - r * v, v
