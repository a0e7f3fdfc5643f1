"""A program's work, for roofline bounds: the floating-point operations of its products
(convolutions, matrix products, recurrent layers; a multiply-add counts two) and the bytes it must
move at least (its weights, inputs and outputs, each once).

Elementwise ops, reductions and data movement add no FLOPs here: next to the products they are
memory traffic, which the bytes bound covers only in its minimum (intermediates are not counted,
since a fusing compiler need not write them). Products inside control-flow bodies are counted once
(trip counts are not known statically).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .instruction import LITERAL, PARAM, RETURN

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


@dataclass(frozen=True)
class Work:
    flops: int
    bytes: int

    def bound_seconds(self, peak_flops: float, peak_bytes: float) -> float:
        """The roofline's least time: the slower of computing and moving the minimum."""
        return max(self.flops / peak_flops, self.bytes / peak_bytes)

    def bound(self, peak_flops: float, peak_bytes: float) -> str:
        """Which side of the roofline bounds it: "compute" or "memory"."""
        return "compute" if self.flops / peak_flops >= self.bytes / peak_bytes else "memory"


def _lens(value) -> tuple:
    return tuple(int(v) for v in getattr(value.shape, "lens", ()) or ())


def instruction_flops(ins) -> int:
    """FLOPs of one instruction (0 for ops that are not products)."""
    op = ins.op
    if op in ("Conv", "fused_conv"):
        w = _lens(ins.inputs[1])
        return 2 * prod(_lens(ins)) * prod(w[1:])
    if op == "ConvTranspose":
        x, w = _lens(ins.inputs[0]), _lens(ins.inputs[1])
        return 2 * prod(x) * prod(w[1:])
    if op in ("MatMul", "Gemm"):
        a = _lens(ins.inputs[0])
        k = a[0] if op == "Gemm" and ins.attrs.get("transA") else a[-1]
        return 2 * prod(_lens(ins)) * k
    if op in _GATES:
        x, w, r = (_lens(v) for v in ins.inputs[:3])
        steps, batch = (x[0], x[1]) if not ins.attrs.get("layout") else (x[1], x[0])
        directions, gate_rows = w[0], w[1]
        return 2 * steps * batch * directions * gate_rows * (w[2] + r[2])
    return 0


def _nbytes(value, fp16: bool) -> int:
    import numpy as np
    dtype = getattr(value.shape, "dtype", None)
    if dtype is None:
        return 0
    lens = _lens(value)
    size = np.dtype(dtype).itemsize
    if fp16 and dtype == "float32":
        size = 2            # fp16 mode stores floating weights and activations in half precision
    return prod(lens) * size


def program_work(program, fp16: bool = False) -> Work:
    """The work of ``program``'s main module (and the modules its instructions run)."""
    from compiler.passes.rewrite import all_instructions
    main = program.main
    flops = sum(instruction_flops(ins) for ins in all_instructions(main))
    moved = 0
    for ins in main.instructions:
        if ins.op in (LITERAL, PARAM):
            moved += _nbytes(ins, fp16)
        elif ins.op == RETURN:
            moved += sum(_nbytes(v, fp16) for v in ins.inputs)
    return Work(int(flops), int(moved))
