"""LSTM and GRU with literal weights, default activations, no clip, peepholes or sequence
lengths: the input projection of every step is one matrix product (bias folded in), and each
step is one small product ``h @ R^T`` plus in-place gate arithmetic on buffers prepared at
lowering. Where numba is importable the whole recurrence of a direction is one compiled loop
(``rnn_jit``), which removes the dozen NumPy calls of each step.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape

from .common import FAST_DTYPES
from .pointwise import jit_enabled, jitted

DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def _supported(ins) -> bool:
    a = ins.attrs
    names = a["inputs"]
    if "sequence_lens" in names or "P" in names or a.get("clip") is not None or a.get("input_forget"):
        return False
    dirs = 2 if a["direction"] == "bidirectional" else 1
    if [spec[0] for spec in a["activations"]] != DEFAULTS[ins.op] * dirs:
        return False
    weights = dict(zip(names, ins.inputs))
    if any(weights[k].op != LITERAL for k in ("W", "R", "B") if k in weights):
        return False
    shapes = [i.shape for i in ins.inputs] + list(ins.shape)
    return all(isinstance(s, Shape) and s.static for s in shapes) and \
        ins.inputs[0].shape.dtype in FAST_DTYPES and all(s.dtype == ins.inputs[0].shape.dtype for s in shapes)


def _sigmoid(z):
    np.negative(z, out=z)
    np.exp(z, out=z)
    z += 1
    np.reciprocal(z, out=z)


def rnn_kernel(ins):
    if ins.op not in DEFAULTS or not _supported(ins):
        return None
    a = ins.attrs
    names = a["inputs"]
    weights = dict(zip(names, ins.inputs))
    dtype = np.dtype(ins.inputs[0].shape.dtype)
    gates, h = (4 if ins.op == "LSTM" else 3), a["hidden_size"]
    dirs = 2 if a["direction"] == "bidirectional" else 1
    w = weights["W"].value.astype(dtype)
    r = weights["R"].value.astype(dtype)
    b = weights["B"].value.astype(dtype) if "B" in weights else np.zeros((dirs, 2 * gates * h), dtype)
    wt = [np.ascontiguousarray(w[d].T) for d in range(dirs)]
    rt = [np.ascontiguousarray(r[d].T) for d in range(dirs)]
    wb, rb = b[:, :gates * h], b[:, gates * h:]
    lbr = ins.op == "GRU" and a.get("linear_before_reset")
    # Recurrent biases that add outside any product fold into the input projection's bias.
    in_bias = wb + rb if not lbr else wb + np.concatenate([rb[:, :2 * h], np.zeros_like(rb[:, 2 * h:])], axis=1)
    layout = a["layout"]
    x_lens = ins.inputs[0].shape.lens
    seq, batch = (x_lens[1], x_lens[0]) if layout else (x_lens[0], x_lens[1])
    step = _jit_steps(ins.op) if jit_enabled() and dtype == np.float32 else None
    run_direction = _lstm_direction if ins.op == "LSTM" else _gru_direction
    state_names = ["initial_h", "initial_c"][:2 if ins.op == "LSTM" else 1]

    def run(*args):
        v = dict(zip(names, args))
        x = v["X"].transpose(1, 0, 2) if layout else v["X"]
        y = np.zeros((seq, dirs, batch, h), dtype)
        states = [v.get(n) for n in state_names]
        states = [np.zeros((dirs, batch, h), dtype) if s is None else (s.transpose(1, 0, 2) if layout else s)
                  for s in states]
        finals = [np.empty((dirs, batch, h), dtype) for _ in state_names]
        for d in range(dirs):
            xw = np.matmul(x.reshape(seq * batch, -1), wt[d]).reshape(seq, batch, gates * h)
            xw += in_bias[d]
            reverse = a["direction"] == "reverse" or d == 1
            run_direction(step, xw, rt[d], rb[d], [s[d] for s in states], y[:, d], reverse,
                          [f[d] for f in finals], lbr)
        outs = [y] + finals
        if layout:
            outs = [y.transpose(2, 0, 1, 3)] + [f.transpose(1, 0, 2) for f in finals]
        return tuple(np.ascontiguousarray(o) for o in outs)
    return run


def _lstm_direction(step, xw, rt, rb, states, y, reverse, finals, lbr):
    seq, batch, _ = xw.shape
    h = rt.shape[0]
    c = states[1].copy()
    if step is not None:
        hcur = states[0].copy()
        step(xw, rt, hcur, c, y, reverse)
    else:
        hcur = states[0]
        z = np.empty((batch, 4 * h), xw.dtype)
        tmp = np.empty((batch, h), xw.dtype)
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            np.matmul(hcur, rt, out=z)
            z += xw[t]
            _sigmoid(z[:, :3 * h])                  # gates i, o, f
            np.tanh(z[:, 3 * h:], out=z[:, 3 * h:])  # candidate
            c *= z[:, 2 * h:3 * h]
            np.multiply(z[:, :h], z[:, 3 * h:], out=tmp)
            c += tmp
            np.tanh(c, out=tmp)
            np.multiply(z[:, h:2 * h], tmp, out=y[t])
            hcur = y[t]
    finals[0][...] = hcur
    finals[1][...] = c


def _gru_direction(step, xw, rt, rb, states, y, reverse, finals, lbr):
    seq, batch, _ = xw.shape
    h = rt.shape[0]
    if step is not None:
        hcur = states[0].copy()
        step(xw, rt, rb, hcur, y, reverse, bool(lbr))
        finals[0][...] = hcur
        return
    hcur = states[0]
    zr = np.empty((batch, 2 * h), xw.dtype)
    cand = np.empty((batch, h), xw.dtype)
    tmp = np.empty((batch, h), xw.dtype)
    rt_zr, rt_h, rb_h = rt[:, :2 * h], rt[:, 2 * h:], rb[2 * h:]
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        np.matmul(hcur, rt_zr, out=zr)
        zr += xw[t, :, :2 * h]
        _sigmoid(zr)                                 # update z, reset r
        if lbr:
            np.matmul(hcur, rt_h, out=cand)
            cand += rb_h
            cand *= zr[:, h:]
        else:
            np.multiply(zr[:, h:], hcur, out=tmp)
            np.matmul(tmp, rt_h, out=cand)
        cand += xw[t, :, 2 * h:]
        np.tanh(cand, out=cand)
        np.subtract(hcur, cand, out=tmp)            # h' = cand + z * (h - cand)
        tmp *= zr[:, :h]
        np.add(cand, tmp, out=y[t])
        hcur = y[t]
    finals[0][...] = hcur


def _jit_steps(op):
    return jitted("rnn_jit", "lstm_steps" if op == "LSTM" else "gru_steps")
