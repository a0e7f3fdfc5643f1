"""Read a printed program (``Program.to_text(full=True)``) back into a ``Program``.

The listing's grammar, one instruction a line (see ``compiler.ir.printer``)::

    module NAME[ (root, target T)]:
      %N = @param "name" -> SHAPE
      %N = @literal JSON -> SHAPE
      %N = OP[{JSON attrs}](ARGS)[[MODULE, ...]][ @TARGET] -> SHAPE
      @return(ARGS)

ARGS are ``%N`` (this module) or ``%MODULE.N`` (an enclosing module); SHAPE is
``dtype[d0,d1,...]`` with ``?`` for run-time lengths and an optional ``{strides}``, or a tuple
``(SHAPE, ...)``. Literals printed as digests (``<n values sha1:...>``) cannot be read back.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .instruction import LITERAL, PARAM, RETURN
from .program import Program
from .shape import Shape, TupleShape

_HEADER = re.compile(r"^module (?P<name>\S+?)(?: \(root, target (?P<target>[^)]+)\))?:$")
_NAME = re.compile(r"[A-Za-z_@][\w.:@-]*")
_REF = re.compile(r"%(?:(?P<module>[^\s,()]+)\.)?(?P<index>\d+)")
_DECODER = json.JSONDecoder()


class ReadError(ValueError):
    """The text is not a program listing; the message names the line."""


def read_program(text: str) -> Program:
    blocks = _split_blocks(text)
    program = Program()
    for name, target, _ in blocks:
        if name != "main":
            program.create_module(name)
        if target:
            program.roots[name] = target
    _Reader(program, {name: lines for name, _, lines in blocks}).read_all()
    return program


def _split_blocks(text: str):
    blocks, current = [], None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        header = _HEADER.match(line)
        if header:
            current = (header["name"], header["target"], [])
            blocks.append(current)
        elif current is None:
            raise ReadError(f"line {number}: expected 'module NAME:', got {line!r}")
        else:
            current[2].append((number, line))
    if not blocks or blocks[0][0] != "main":
        raise ReadError("the listing must start with 'module main:'")
    return blocks


class _Reader:
    def __init__(self, program: Program, lines: dict):
        self.program = program
        self.lines = lines
        self.values: dict[str, list] = {}  # module name → its numbered instructions
        self.busy: set[str] = set()

    def read_all(self) -> None:
        for name in self.lines:
            self.read_module(name)

    def read_module(self, name: str) -> None:
        if name in self.values:
            return
        if name in self.busy:
            raise ReadError(f"module {name!r} reads values of a module that reads its own")
        self.busy.add(name)
        module = self.program.modules[name]
        numbered: list = []
        for number, line in self.lines[name]:
            try:
                ins = self.read_line(module, numbered, line)
            except ReadError:
                raise
            except (ValueError, KeyError, IndexError) as e:
                raise ReadError(f"line {number}: {e}") from None
            if ins is not None:
                numbered.append(ins)
        self.values[name] = numbered
        self.busy.discard(name)

    # ----- one line ---------------------------------------------------------------------------
    def read_line(self, module, numbered, line: str):
        if line.startswith(RETURN):
            args, _ = self.read_args(module, numbered, line, len(RETURN))
            module.add_return(args)
            return None
        head = re.match(r"%(\d+) = ", line)
        if not head or int(head[1]) != len(numbered):
            raise ValueError(f"expected '%{len(numbered)} = ...', got {line!r}")
        pos = head.end()
        op = _NAME.match(line, pos)
        if not op:
            raise ValueError(f"no operator name in {line!r}")
        pos = op.end()
        if op[0] == PARAM:
            name, pos = _DECODER.raw_decode(line, pos + 1)
            return module.add_parameter(name, self.read_shape_tail(line, pos))
        if op[0] == LITERAL:
            if line[pos + 1:pos + 2] == "<":
                raise ValueError("a literal printed as a digest cannot be read back; print with full=True")
            data, pos = _DECODER.raw_decode(line, pos + 1)
            shape = self.read_shape_tail(line, pos)
            return module.add_literal(np.array(data, dtype=shape.dtype).reshape(shape.lens))
        attrs = {}
        if line[pos] == "{":
            attrs, pos = _DECODER.raw_decode(line, pos)
            attrs = {k: _attr_value(v) for k, v in attrs.items()}
        inputs, pos = self.read_args(module, numbered, line, pos)
        modules = []
        if line[pos:pos + 1] == "[":
            end = line.index("]", pos)
            modules = [self.program.modules[n.strip()] for n in line[pos + 1:end].split(",") if n.strip()]
            pos = end + 1
        target = None
        at = re.match(r" @(\S+)", line[pos:])
        if at:
            target, pos = at[1], pos + at.end()
        shape = self.read_shape_tail(line, pos)
        return module.add_instruction(op[0], inputs, attrs, modules, shape=shape, target=target)

    def read_args(self, module, numbered, line: str, pos: int):
        if line[pos] != "(":
            raise ValueError(f"expected '(' at column {pos}")
        end = line.index(")", pos)
        args = []
        for token in filter(None, (t.strip() for t in line[pos + 1:end].split(","))):
            ref = _REF.fullmatch(token)
            if not ref:
                raise ValueError(f"bad argument {token!r}")
            owner = ref["module"]
            if owner is None or owner == module.name:
                args.append(numbered[int(ref["index"])])
            else:
                self.read_module(owner)
                args.append(self.values[owner][int(ref["index"])])
        return args, end + 1

    def read_shape_tail(self, line: str, pos: int):
        rest = line[pos:]
        if not rest.startswith(" -> "):
            raise ValueError(f"expected ' -> SHAPE' at column {pos}")
        shape, end = parse_shape(rest, 4)
        if end != len(rest):
            raise ValueError(f"unexpected text after the shape: {rest[end:]!r}")
        return shape


def parse_shape(text: str, pos: int = 0):
    """A ``Shape`` or ``TupleShape`` from its printed form starting at ``pos``; returns it and
    the position after it."""
    if text[pos] == "(":
        elements, pos = [], pos + 1
        while text[pos] != ")":
            shape, pos = parse_shape(text, pos)
            elements.append(shape)
            if text.startswith(", ", pos):
                pos += 2
        return TupleShape(tuple(elements)), pos + 1
    m = re.compile(r"(\w+)\[([^\]]*)\](?:\{([^}]*)\})?").match(text, pos)
    if not m:
        raise ValueError(f"bad shape at {text[pos:]!r}")
    lens = [None if d == "?" else int(d) for d in m[2].split(",")] if m[2] else []
    strides = None if m[3] is None else [None if d == "?" else int(d) for d in m[3].split(",")]
    return Shape(m[1], lens, strides), m.end()


def _attr_value(value):
    if isinstance(value, dict) and "__array__" in value:
        return np.array(value["__array__"], dtype=value["dtype"])
    if isinstance(value, dict):
        return {k: _attr_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_attr_value(v) for v in value]
    return value
