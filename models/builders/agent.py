"""agentmodel: a small actor-critic reinforcement-learning agent (IMPALA/A2C style).

Design: a 64-feature observation goes through a 2-layer MLP encoder (256, 256, ReLU), a
single-step LSTM core (hidden 256, recurrent state as inputs/outputs), and two heads: a policy
over 18 discrete actions (Atari's full action set; LogSoftmax) and a scalar value. About 0.61 M
parameters and 1.2 MFLOP per step: a latency-bound model, as the reference row's rate shows.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from models.graph import Graph
from models.layers import linear

VERSION = 1


def build(obs: int = 64, hidden: int = 256, core: int = 256, actions: int = 18) -> Graph:
    g = Graph("agentmodel", "actor-critic agent: MLP encoder, LSTM core, policy and value heads")
    x = g.input("observation", TensorProto.FLOAT, ["batch", obs])
    h0 = g.input("h0", TensorProto.FLOAT, [1, "batch", core])
    c0 = g.input("c0", TensorProto.FLOAT, [1, "batch", core])
    x = g.op("Relu", [linear(g, x, obs, hidden, gain=2.0, name="encoder.0")])
    x = g.op("Relu", [linear(g, x, hidden, hidden, gain=2.0, name="encoder.2")])
    seq = g.op("Unsqueeze", [x, g.const(np.array([0], np.int64), name="axes")])        # [1, batch, hidden]
    k = 1.0 / math.sqrt(core)
    w = g.param("core.weight_ih", (1, 4 * core, hidden), "uniform", -k, k)
    r = g.param("core.weight_hh", (1, 4 * core, core), "uniform", -k, k)
    b = g.param("core.bias", (1, 8 * core), "uniform", -k, k)
    y, hn, cn = g.op("LSTM", [seq, w, r, b, "", h0, c0], n_out=3, hidden_size=core, name="core")
    feat = g.op("Squeeze", [y, g.const(np.array([0, 1], np.int64), name="axes")])       # [batch, core]
    policy = g.op("LogSoftmax", [linear(g, feat, core, actions, name="policy")], axis=-1)
    value = linear(g, feat, core, 1, name="value")
    g.output(policy, "policy_logits", shape=["batch", actions])
    g.output(value, "value", shape=["batch", 1])
    g.output(hn, "hn", shape=[1, "batch", core])
    g.output(cn, "cn", shape=[1, "batch", core])
    return g
