"""Two-operand Einsum as one batched matrix product: the plan both the cpu and the gpu target run.

Each index is a batch index (in both operands and the output), a contracted one (in both, not
the output), or free (in one operand and the output). The operands are transposed to
(batch, free, contracted) / (batch, contracted, free), multiplied, and the result transposed to
the output's order. Anything else (repeated indices, an index summed in one operand only,
ellipses, more operands) has no plan: the target runs the reference (or its array module's einsum).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EinsumPlan:
    a: str                  # the operands' and the output's indices
    b: str
    out: str
    batch: tuple
    free_a: tuple           # in output order
    free_b: tuple
    contract: tuple         # in the first operand's order

    @property
    def perm_a(self) -> list[int]:
        return [self.a.index(i) for i in self.batch + self.free_a + self.contract]

    @property
    def perm_b(self) -> list[int]:
        return [self.b.index(i) for i in self.batch + self.contract + self.free_b]

    @property
    def perm_out(self) -> list[int]:
        """From the product's (batch, free_a, free_b) order to the output's."""
        mid = self.batch + self.free_a + self.free_b
        return [mid.index(i) for i in self.out]


def plan_einsum(eq: str) -> EinsumPlan | None:
    """The plan of two-operand equation ``eq``, or None where it is not a plain product."""
    if "..." in eq or "->" not in eq:
        return None
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    a, b = terms
    if any(len(set(t)) != len(t) for t in (a, b, out)) or set(out) - set(a + b):
        return None
    if (set(a) - set(b) - set(out)) or (set(b) - set(a) - set(out)):
        return None     # an index summed within one operand: not a plain product
    return EinsumPlan(a, b, out,
                      batch=tuple(i for i in out if i in a and i in b),
                      free_a=tuple(i for i in out if i in a and i not in b),
                      free_b=tuple(i for i in out if i in b and i not in a),
                      contract=tuple(i for i in a if i in b and i not in out))
