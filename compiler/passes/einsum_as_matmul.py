"""An Einsum that is a batched matrix product made a MatMul, so that the passes that read
products (attention, linear epilogues) see it in the one form they know.

    Einsum("BGHID,BGHJD->BGHIJ", q, k)   ->  MatMul(q, Transpose(k, swap the last two))
    Einsum("BGHIJ,BGHJD->BGHID", p, v)   ->  MatMul(p, v)

MaxViT's attention is written so (torchvision exports both products as Einsums), as are many
research models'. The equation qualifies when both operands and the result share their leading
letters in the same order (the batch axes, of equal lengths in both operands), each operand has
two more letters, one of them the contracted letter that the result lacks, and the result's last
two letters come one from each operand, in float32 or float16. An ellipsis or a repeated letter
leaves it alone.
"""
from __future__ import annotations

from compiler.ir.shape import Shape
from compiler.passes.rewrite import substitute, swapped_last_axes

# Types whose MatMul every target runs as a product of its own type (the gpu target's GEMMs);
# an Einsum of another type (bfloat16, integers) stays an Einsum.
PRODUCT_DTYPES = ("float32", "float16")


def product_form(equation: str) -> tuple[bool, bool, bool] | None:
    """(swap the operands, transpose the left, transpose the right) that make ``equation`` a
    MatMul of its operands, or None when it is not a batched matrix product."""
    if "->" not in equation or "." in equation:
        return None
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != 2 or any(len(set(t)) != len(t) for t in (*terms, out)):
        return None
    a, b = terms
    if not (len(a) == len(b) == len(out) >= 2) or a[:-2] != b[:-2] or a[:-2] != out[:-2]:
        return None
    i, j = out[-2:]
    contracted = (set(a[-2:]) & set(b[-2:])) - {i, j}
    if len(contracted) != 1:
        return None
    (k,) = contracted
    if set(a[-2:]) == {j, k} and set(b[-2:]) == {i, k}:
        a, b, swapped = b, a, True
    elif set(a[-2:]) == {i, k} and set(b[-2:]) == {j, k}:
        swapped = False
    else:
        return None
    return swapped, a[-2:] != i + k, b[-2:] != k + j


class EinsumAsMatMul:
    name = "einsum_as_matmul"

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in [i for i in module.instructions if i.op == "Einsum"]:
            form = product_form(ins.attrs["equation"])
            if form is None or len(ins.inputs) != 2:
                continue
            swapped, left_t, right_t = form
            left, right = reversed(ins.inputs) if swapped else ins.inputs
            if not all(isinstance(x.shape, Shape) and x.shape.static and x.shape.dtype in PRODUCT_DTYPES
                       for x in (left, right)) or tuple(left.shape.lens[:-2]) != tuple(right.shape.lens[:-2]):
                continue
            if left_t:
                left = swapped_last_axes(module, left, ins)
            if right_t:
                right = swapped_last_axes(module, right, ins)
            product = module.add_instruction("MatMul", [left, right], {}, before=ins, name=ins.name)
            if product.shape != ins.shape:     # the equation's lengths disagree with MatMul's
                module.remove_instruction(product)
                continue
            substitute(module, ins, product)
