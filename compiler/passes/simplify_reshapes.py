"""Simplify reshape-like chains and transposes.

- A reshape-like op (Reshape, Flatten, Squeeze, Unsqueeze) that does not change the lengths is
  removed.
- A reshape-like op whose input is another reshape-like op reads the inner op's input directly
  (one ``Reshape{shape}`` to the final lengths); the inner one goes when nothing else reads it.
- ``Transpose`` of ``Transpose`` becomes one ``Transpose`` (none if the permutations cancel).

Only static, packed shapes are touched: a layout pass may have given a value other strides.
"""
from __future__ import annotations

from compiler.ir.shape import Shape
from compiler.passes.rewrite import substitute

RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _plain(shape) -> bool:
    return isinstance(shape, Shape) and shape.static and shape.standard()


def _static(ins) -> bool:
    """Lengths fixed at compile time (ops keep run-time shape inputs as extra inputs)."""
    return len(ins.inputs) == 1 and not ins.attrs.get("dynamic")


class SimplifyReshapes:
    name = "simplify_reshapes"

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in list(module.instructions):
            if ins.module is not module:
                continue  # removed earlier in this sweep
            if ins.op in RESHAPES:
                self._reshape(module, ins)
            elif ins.op == "Transpose":
                self._transpose(module, ins)

    @staticmethod
    def _reshape(module, ins) -> None:
        source = ins.inputs[0]
        if not (_plain(ins.shape) and _plain(source.shape)):
            return
        if ins.shape.lens == source.shape.lens:
            substitute(module, ins, source)
            return
        if source.op in RESHAPES and _static(source) and _plain(source.inputs[0].shape):
            origin = source.inputs[0]
            if origin.shape.lens == ins.shape.lens:
                substitute(module, ins, origin)
                return
            merged = module.add_instruction(
                "Reshape", [origin], attrs={"shape": list(ins.shape.lens), "allowzero": 0}, before=ins)
            substitute(module, ins, merged)
            if not source.users:
                module.remove_instruction(source)

    @staticmethod
    def _transpose(module, ins) -> None:
        source = ins.inputs[0]
        if source.op != "Transpose" or not (_plain(ins.shape) and _plain(source.shape)):
            return
        ndim = ins.shape.ndim
        outer = list(ins.attrs.get("perm") or reversed(range(ndim)))
        inner = list(source.attrs.get("perm") or reversed(range(ndim)))
        perm = [inner[p] for p in outer]
        origin = source.inputs[0]
        if perm == list(range(ndim)):
            substitute(module, ins, origin)
        else:
            merged = module.add_instruction("Transpose", [origin], attrs={"perm": perm}, before=ins)
            substitute(module, ins, merged)
        if not source.users:
            module.remove_instruction(source)
