"""Readable listing of modules and programs (``str(program)``).

One instruction a line: ``%3 = Conv{"strides":[1,1]}(%1, %2) -> float32[1,64,56,56]``.
Attributes print as JSON so the listing can be read back (``compiler.ir.reader``); an input from
an enclosing module prints as ``%module.N``; module inputs print as ``[module_name, ...]``.
Literals of up to ``INLINE_LIMIT`` elements print their values; larger ones print a digest unless
``full=True``.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from .instruction import LITERAL, PARAM, RETURN, Instruction

INLINE_LIMIT = 16


def _attr_json(attrs: dict) -> str:
    def conv(v):
        if isinstance(v, np.ndarray):
            return {"__array__": v.tolist(), "dtype": v.dtype.name}
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v
    return json.dumps({k: conv(v) for k, v in attrs.items()}, separators=(",", ":"), sort_keys=True)


def literal_text(value: np.ndarray, full: bool = False) -> str:
    if value.size <= INLINE_LIMIT or full:
        return json.dumps(value.tolist())
    digest = hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:12]
    return f"<{value.size} values sha1:{digest}>"


def instruction_text(ins: Instruction, names: dict[Instruction, str], full: bool = False) -> str:
    def ref(i: Instruction) -> str:
        if i in names:
            return names[i]
        # A value of an enclosing module: its number in that module's own listing.
        if i.module is None:
            return f"%?.{i.uid}"
        return f"%{i.module.name}.{module_names(i.module)[i][1:]}"

    args = ", ".join(ref(i) for i in ins.inputs)
    if ins.op == RETURN:
        return f"@return({args})"
    head = f"{names[ins]} = "
    if ins.op == PARAM:
        return f"{head}@param {json.dumps(ins.name)} -> {ins.shape}"
    if ins.op == LITERAL:
        return f"{head}@literal {literal_text(ins.value, full)} -> {ins.shape}"
    text = f"{head}{ins.op}"
    if ins.attrs:
        text += _attr_json(ins.attrs)
    text += f"({args})"
    if ins.module_inputs:
        text += "[" + ", ".join(m.name for m in ins.module_inputs) + "]"
    if ins.target:
        text += f" @{ins.target}"
    return f"{text} -> {ins.shape}"


def module_names(module) -> dict[Instruction, str]:
    return {ins: f"%{n}" for n, ins in enumerate(i for i in module.instructions if i.op != RETURN)}


def print_module(module, full: bool = False, header: str | None = None) -> str:
    names = module_names(module)
    lines = [header or f"module {module.name}:"]
    lines += ["  " + instruction_text(ins, names, full) for ins in module.instructions]
    return "\n".join(lines)
