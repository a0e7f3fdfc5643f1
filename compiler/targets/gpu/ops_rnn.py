"""LSTM, GRU and RNN: one GEMM for every time step's input projection, then every step in one
launch, or per step one fused kernel (recurrent product and cell, ``kernels/rnn_step``: fp32 LSTM
and linear-before-reset GRU at batch <= 8; the whole sequence in one launch where its hidden size
fits, one launch per step where not) or one GEMM with the recurrent weights and one gate kernel.

Handled here: default activations, no clip, no peepholes, full-length sequences (absent or
literal ``sequence_lens`` equal to the sequence length), any direction and layout. Other forms run
the reference computation.
"""
from __future__ import annotations

import numpy as np

from .kernels.raw_source import cuda_source
from .lowering import literal_of, lowers

DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}

# Which kernels the lowering may take (tests set them to reach each path on any GPU): the fused
# step kernel, the whole-sequence kernel, and how its blocks exchange h ("cluster" where
# thread-block clusters exist and fit, else the grid barrier; "grid": always the grid barrier).
STEP_KERNEL = True
SEQUENCE_KERNEL = True
EXCHANGE = "cluster"

_LSTM_CELL = cuda_source("lstm_cell_body")      # element-wise kernel bodies (one element each)
_GRU_CELL = cuda_source("gru_cell_lbr_body")

_kernels: dict = {}


def _kernel(kind: str):
    import cupy
    if kind not in _kernels:
        if kind == "lstm":
            _kernels[kind] = cupy.ElementwiseKernel("raw T g, T c_prev, int64 H", "T h_out, T c_out",
                                                    _LSTM_CELL, "lstm_cell")
        else:
            _kernels[kind] = cupy.ElementwiseKernel("raw T x, raw T r, raw T rb, T h_prev, int64 H, int32 has_rb",
                                                    "T h_out", _GRU_CELL, "gru_cell_lbr")
    return _kernels[kind]


def _sigmoid(xp, v):
    return 1 / (1 + xp.exp(-v))


def _lstm_cell(L, g, c_prev, h, h_out=None, c_out=None):
    """One step's gates ``g`` (batch, 4h) to (h, c); on the device into ``h_out``/``c_out`` when
    given (the step's slice of Y, a spare c buffer)."""
    xp = L.xp
    if L.backend.on_gpu:
        h_out = xp.empty_like(c_prev) if h_out is None else h_out
        c_out = xp.empty_like(c_prev) if c_out is None else c_out
        _kernel("lstm")(g, c_prev, np.int64(h), h_out, c_out)
        return h_out, c_out
    i, o, f, c = g[:, :h], g[:, h:2 * h], g[:, 2 * h:3 * h], g[:, 3 * h:]
    c_new = _sigmoid(xp, f) * c_prev + _sigmoid(xp, i) * xp.tanh(c)
    return (_sigmoid(xp, o) * xp.tanh(c_new)).astype(c_prev.dtype), c_new.astype(c_prev.dtype)


def _gru_cell_lbr(L, xw, hr, h_prev, h, rb=None, out=None):
    """One linear-before-reset step; the recurrent bias ``rb`` is added to ``hr`` here (in the
    kernel on the device), the result goes into ``out`` when given."""
    xp = L.xp
    if L.backend.on_gpu:
        out = xp.empty_like(h_prev) if out is None else out
        _kernel("gru")(xw, hr, rb if rb is not None else hr, h_prev, np.int64(h),
                       np.int32(rb is not None), out)
        return out
    if rb is not None:
        hr = hr + rb
    z = _sigmoid(xp, xw[:, :h] + hr[:, :h])
    r = _sigmoid(xp, xw[:, h:2 * h] + hr[:, h:2 * h])
    n = xp.tanh(xw[:, 2 * h:] + r * hr[:, 2 * h:])
    return ((1 - z) * n + z * h_prev).astype(h_prev.dtype)


def _generic_step(L, op, lbr, mm, direct, xw_t, hp, cp, rt, rb, y_t, spare_c):
    """One step as GEMM + cell (no fused kernel): returns (h, c), h written into ``y_t`` (Y's
    slice for the step and direction); ``spare_c`` a free c buffer on the device."""
    xp = L.xp
    h = hp.shape[-1]
    if op == "LSTM":
        # On the device: the recurrent product accumulates into this step's input projection
        # (cuBLAS beta = 1) and the cell writes h straight into Y.
        from .kernels.gemm import matmul as cublas_matmul
        if direct and cublas_matmul(hp, rt, out=xw_t, accumulate=True) is not None:
            return _lstm_cell(L, xw_t, cp, h, y_t, spare_c)
        hp, cp = _lstm_cell(L, xw_t + mm(hp, rt), cp, h)
    elif op == "GRU" and lbr:
        hr = mm(hp, rt)
        if L.backend.on_gpu:
            return _gru_cell_lbr(L, xw_t, hr, hp, h, rb, y_t), cp
        hp = _gru_cell_lbr(L, xw_t, hr, hp, h, rb)
    elif op == "GRU":
        hr = mm(hp, rt[:, :2 * h])
        if rb is not None:
            hr += rb[:2 * h]
        z = _sigmoid(xp, xw_t[:, :h] + hr[:, :h])
        r = _sigmoid(xp, xw_t[:, h:2 * h] + hr[:, h:])
        n = xw_t[:, 2 * h:] + mm(r * hp, rt[:, 2 * h:])
        if rb is not None:
            n += rb[2 * h:]
        hp = ((1 - z) * xp.tanh(n) + z * hp).astype(y_t.dtype)
    else:
        hp = xp.tanh(xw_t + mm(hp, rt)).astype(y_t.dtype)
    y_t[...] = hp
    return hp, cp


def _prepared(xp, op, args, pos, dirs: int, width: int) -> list:
    """Per direction: W^T, R^T (contiguous), the input and recurrent biases (``width`` = gates *
    hidden each) and R's rows."""
    w, r = args[pos["W"]], args[pos["R"]]
    b = args[pos["B"]] if "B" in pos else None
    out = []
    for d in range(dirs):
        wb = b[d, :width] if b is not None else None
        rb = b[d, width:] if b is not None else None
        if wb is not None and op != "GRU":
            wb = wb + rb     # both biases enter the input projection: one add per run, not two
        out.append((xp.ascontiguousarray(w[d].T), xp.ascontiguousarray(r[d].T), wb, rb,
                    xp.ascontiguousarray(r[d])))
    return out


def _sequence_length(ins, pos) -> int | None:
    """The sequence length when the op is a form handled here (default activations, no clip or
    peepholes, full-length sequences), else None."""
    a = ins.attrs
    dirs = 2 if a["direction"] == "bidirectional" else 1
    if a.get("clip") is not None or "P" in pos or a.get("input_forget", 0):
        return None
    if [s[0] for s in a["activations"]] != DEFAULTS[ins.op] * dirs:
        return None
    x_shape = ins.inputs[pos["X"]].shape
    seq = x_shape.lens[1] if a["layout"] else x_shape.lens[0]
    if "sequence_lens" in pos:
        lens = literal_of(ins, pos["sequence_lens"])
        if lens is None or not (np.asarray(lens) == seq).all():
            return None
    return seq


@lowers("LSTM", "GRU", "RNN")
def _recurrent(ins, L):
    a = ins.attrs
    op = ins.op
    pos = {n: k for k, n in enumerate(a["inputs"])}
    seq = _sequence_length(ins, pos)
    if seq is None:
        return None
    dirs = 2 if a["direction"] == "bidirectional" else 1
    xp = L.xp
    h = int(a["hidden_size"])
    gates = GATES[op]
    lbr = int(a.get("linear_before_reset", 0))
    n_out = len(ins.shape.elements)
    from .kernels.gemm import make_matmul
    mm, direct = make_matmul(xp, L.backend.on_gpu)
    on_gpu = L.backend.on_gpu
    fused_steps, sequences, exchange = STEP_KERNEL, SEQUENCE_KERNEL, EXCHANGE
    if on_gpu:
        from .kernels import rnn_step

    cache = {}

    def run(*args):
        x = args[pos["X"]]
        if a["layout"]:
            x = x.transpose(1, 0, 2)
        batch = x.shape[1]
        key = tuple(id(args[pos[n]]) for n in ("W", "R", "B") if n in pos)
        if cache.get("key") != key:
            cache["key"], cache["params"] = key, _prepared(xp, op, args, pos, dirs, gates * h)
        params = cache["params"]
        dtype = x.dtype
        y = xp.empty((seq, dirs, batch, h), dtype=dtype)
        finals_h, finals_c = [], []
        # One fused kernel per step (recurrent product + cell) where it applies.
        fused = on_gpu and fused_steps and rnn_step.applies(dtype.name, batch) and (op == "LSTM" or
                                                                                     (op == "GRU" and lbr))
        for d in range(dirs):
            wt, rt, wb, rb, r_rows = params[d]
            xw = mm(x.reshape(seq * batch, -1), wt).reshape(seq, batch, gates * h)
            if wb is not None:
                xw += wb          # (with the recurrent bias folded in, except for GRU)
            hp = xp.ascontiguousarray(args[pos["initial_h"]][d]) if "initial_h" in pos else xp.zeros((batch, h), dtype)
            cp = xp.ascontiguousarray(args[pos["initial_c"]][d]) if "initial_c" in pos else xp.zeros((batch, h), dtype)
            reverse = a["direction"] == "reverse" or d == 1
            if fused and sequences and seq and rnn_step.sequence_applies(dtype.name, batch, h):
                # Every step in one launch, h straight into Y's slice for this direction.
                if op == "LSTM":
                    c_last = xp.empty((batch, h), dtype)
                    rnn_step.lstm_sequence(xw, r_rows, hp, cp, y[:, d], c_last, reverse, exchange)
                    cp = c_last
                else:
                    rnn_step.gru_sequence(xw, r_rows, rb, hp, y[:, d], reverse, exchange)
                finals_h.append(y[0 if reverse else seq - 1, d])
                finals_c.append(cp)
                continue
            spare_c = [xp.empty((batch, h), dtype), xp.empty((batch, h), dtype)] if on_gpu else None
            for step, t in enumerate(range(seq - 1, -1, -1) if reverse else range(seq)):
                if fused and op == "LSTM":
                    rnn_step.lstm_step(xw[t], r_rows, hp, cp, y[t, d], spare_c[step % 2])
                    hp, cp = y[t, d], spare_c[step % 2]
                    continue
                if fused:
                    rnn_step.gru_step(xw[t], r_rows, rb, hp, y[t, d])
                    hp = y[t, d]
                    continue
                spare = spare_c[step % 2] if on_gpu else None
                hp, cp = _generic_step(L, op, lbr, mm, direct, xw[t], hp, cp, rt, rb, y[t, d], spare)
            finals_h.append(hp)
            finals_c.append(cp)
        outs = [y, xp.stack(finals_h)]
        if op == "LSTM":
            outs.append(xp.stack(finals_c))
        if a["layout"]:
            outs = [outs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]
        return tuple(outs[:n_out])
    run.capturable = direct
    return run
