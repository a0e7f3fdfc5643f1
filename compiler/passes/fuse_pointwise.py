"""Merge chains of elementwise instructions into one ``fused_pointwise`` instruction.

A fused instruction carries its body as data (``attrs["body"]``): a list of steps, each
``{"op", "attrs", "args", "dtype"}`` where an arg is ``"x<i>"`` (the fused instruction's i-th
input), ``"t<j>"`` (the j-th earlier step) or ``"c<dtype>:<value>"`` (a scalar constant folded in
from a one-element literal). The last step is the result. The GPU target turns a body into one
generated CUDA kernel; ``FusedPointwise.compute`` evaluates it with each op's reference
computation, so the fused program keeps a reference meaning (and tests compare the two).

A producer joins its consumer's group when it is elementwise, lives in the same module and every
one of its users is in the group: GELU's and SiLU's input, read twice inside the activation, is
computed once in the activation's kernel instead of written by a kernel of its own. Intermediate results may be smaller than the group's output (they
broadcast), which is what a kernel computing one output element per thread needs.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL, Instruction
from compiler.ir.shape import Shape
from compiler.ops.registry import Op, get_op, register_op

FUSED = "fused_pointwise"

# Elementwise ops the GPU code generator knows how to write (see targets/gpu/pointwise_codegen).
FUSIBLE = frozenset("""
Add Sub Mul Div Pow Relu Sigmoid Tanh Exp Log Sqrt Neg Abs Reciprocal Erf Gelu LeakyRelu Elu
HardSigmoid HardSwish Clip Min Max Sum Mean Where Equal Less Greater LessOrEqual GreaterOrEqual Not
And Or Xor Cast PRelu Identity Softplus Softsign Sign Floor Ceil Round Sin Cos Tan Asin Acos Atan
Sinh Cosh Asinh Acosh Atanh IsNaN IsInf Selu Celu ThresholdedRelu Mish BitwiseAnd BitwiseOr
BitwiseXor BitwiseNot Mod Dropout Swish Shrink
""".split())

FUSIBLE_DTYPES = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64",
                            "uint8", "uint16", "uint32", "uint64", "bool"})


def _is_fusible(ins: Instruction) -> bool:
    if ins.op == FUSED:
        return True
    if ins.op not in FUSIBLE or not isinstance(ins.shape, Shape) or not ins.shape.static:
        return False
    if ins.op == "Dropout" and (len(ins.inputs) > 1 or ins.attrs.get("training_mode")):
        return False
    if ins.shape.dtype not in FUSIBLE_DTYPES:
        return False
    return all(isinstance(i.shape, Shape) and i.shape.dtype in FUSIBLE_DTYPES for i in ins.inputs)


def _scalar_constant(ins: Instruction) -> str | None:
    """``c<dtype>:<value>`` for a one-element finite literal, else None."""
    if ins.op != LITERAL or ins.value is None or np.asarray(ins.value).size != 1:
        return None
    value = np.asarray(ins.value).reshape(())
    if value.dtype.name not in FUSIBLE_DTYPES:
        return None
    if value.dtype.kind == "f" and not np.isfinite(value):
        return None
    item = value.item()
    return f"c{value.dtype.name}:{item!r}"


class _Group:
    """A group under construction: the body plus the outside values it reads."""

    def __init__(self):
        self.inputs: list[Instruction] = []
        self.body: list[dict] = []
        self.emitted: dict = {}     # member -> its ref, so a value read twice is computed once

    def arg_for(self, value: Instruction) -> str:
        const = _scalar_constant(value)
        if const is not None:
            return const
        if value not in self.inputs:
            self.inputs.append(value)
        return f"x{self.inputs.index(value)}"

    def emit(self, ins: Instruction, members: set) -> str:
        """Append ``ins`` (and, first, its fused producers) to the body; return its ref."""
        if ins in self.emitted:
            return self.emitted[ins]
        if ins.op == FUSED:
            ref = self._inline(ins, members)
        else:
            args = [self.emit(i, members) if i in members else self.arg_for(i) for i in ins.inputs]
            self.body.append({"op": ins.op, "attrs": dict(ins.attrs), "args": args,
                              "dtype": ins.shape.dtype})
            ref = f"t{len(self.body) - 1}"
        self.emitted[ins] = ref
        return ref

    def _inline(self, fused: Instruction, members: set) -> str:
        outer = [self.emit(i, members) if i in members else self.arg_for(i) for i in fused.inputs]
        base = len(self.body)

        def remap(a: str) -> str:
            if a.startswith("x"):
                return outer[int(a[1:])]
            if a.startswith("t"):
                return f"t{base + int(a[1:])}"
            return a

        for step in fused.attrs["body"]:
            self.body.append({**step, "args": [remap(a) for a in step["args"]]})
        return f"t{len(self.body) - 1}"


def _collect(root: Instruction) -> set:
    """The producers that fold into ``root``'s kernel: grown until no producer outside has all
    its users inside (a producer read by two members joins once both have)."""
    group = {root}
    grown = True
    while grown:
        grown = False
        for ins in list(group):
            for i in ins.inputs:
                if i in group or i.module is not root.module or not _is_fusible(i):
                    continue
                if i.users and all(u in group for u in i.users):
                    group.add(i)
                    grown = True
    return group - {root}


class FusePointwise:
    name = "fuse_pointwise"

    def apply(self, mpm) -> None:
        module = mpm.module
        # Walk consumers last to first: a consumer absorbs its producers before they are visited.
        for ins in reversed(list(module.instructions)):
            if ins.module is not module or not _is_fusible(ins):
                continue
            members = _collect(ins)
            if ins.op == FUSED and not members:
                continue
            group = _Group()
            group.emit(ins, members)
            fused = module.add_instruction(FUSED, group.inputs, {"body": group.body},
                                           shape=ins.shape, before=ins, name=ins.name)
            module.replace_instruction(ins, fused)
            module.remove_instruction(ins)
            for m in sorted(members, key=lambda m: -module.instructions.index(m)):
                if not m.users:
                    module.remove_instruction(m)


# ----- the fused op's reference meaning ------------------------------------------------------
def _constant(arg: str) -> np.ndarray:
    dtype, text = arg[1:].split(":", 1)
    return np.asarray(eval(text, {"__builtins__": {}}, {"True": True, "False": False}), dtype=dtype)


def evaluate_body(body: list[dict], inputs) -> np.ndarray:
    temps: list = []
    for step in body:
        args = []
        for a in step["args"]:
            if a.startswith("x"):
                args.append(inputs[int(a[1:])])
            elif a.startswith("t"):
                args.append(temps[int(a[1:])])
            else:
                args.append(_constant(a))
        value = get_op(step["op"]).compute(step["attrs"], *args)
        if isinstance(value, (tuple, list)):
            value = value[0]
        temps.append(np.asarray(value).astype(step["dtype"], copy=False))
    return temps[-1]


@register_op
class FusedPointwise(Op):
    name = FUSED
    pointwise = True

    def shape(self, attrs, inputs, literals):
        lens = np.broadcast_shapes(*[tuple(s.lens) for s in inputs]) if inputs else ()
        return Shape(attrs["body"][-1]["dtype"], lens)

    def compute(self, attrs, *args):
        return evaluate_body(attrs["body"], args)
