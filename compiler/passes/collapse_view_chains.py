"""A chain of Reshape, Transpose, Squeeze, Unsqueeze and Flatten ops rewritten as at most three
steps that are views of its source: one Reshape that only splits axes, one Transpose, one Reshape
that only merges axes adjacent in the source.

Exporters split attention heads in several moves; PyTorch's MultiheadAttention, for one, writes
(seq, batch, hidden) -> Reshape (seq, batch·heads, size) -> Transpose -> Reshape (batch, heads,
seq, size). Each step is one index map, and the chain as a whole is a plain transpose of the
source split into heads, but its middle Reshape merges axes that the source's layout keeps apart,
so a target that runs the steps one by one must copy there. The rewritten chain moves no data.

The chain's index map is followed on *atoms*: the source's axes, split wherever a later Reshape
puts an axis boundary inside one (a Reshape must cut an atom into whole factors, else the chain
is left alone). Every step then permutes or regroups atoms, so the result is the source split
into atoms, transposed and regrouped. The rewrite is taken where a step before the last regroups
axes and every axis of the result joins atoms adjacent and in order in the source: splitting and
transposing are views of any strided source, and the one merge left is the result's own, which
the chain had to make too.
"""
from __future__ import annotations

from compiler.ir.shape import Shape

from .rewrite import substitute

MOVES = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"})


def _static(ins) -> bool:
    return isinstance(ins.shape, Shape) and ins.shape.static


class _Atoms:
    """The chain's state: ``base`` (the source's atoms, outermost first), ``dims`` (each axis of
    the current value as its atoms, outermost first; axes of one hold none) and ``size``."""

    def __init__(self, lens):
        self.size: dict[int, int] = {}
        self.base: list[int] = []
        self.dims: list[list[int]] = []
        for n in lens:
            self.dims.append([self._new(n)] if n != 1 else [])
        self.base = [a for d in self.dims for a in d]

    def _new(self, n: int) -> int:
        atom = len(self.size)
        self.size[atom] = n
        return atom

    def _split(self, atom: int, outer: int) -> tuple[int, int]:
        """Cut ``atom`` into (outer part of size ``outer``, inner part) everywhere it appears."""
        hi, lo = self._new(outer), self._new(self.size[atom] // outer)
        for seq in [self.base, *self.dims]:
            if atom in seq:
                at = seq.index(atom)
                seq[at:at + 1] = [hi, lo]
        return hi, lo

    def transpose(self, perm) -> None:
        self.dims = [self.dims[p] for p in perm]

    def reshape(self, lens) -> bool:
        """Regroup the current atoms (row-major) into axes of ``lens``; False where an axis
        boundary cuts an atom into parts that are not whole factors."""
        flat = [a for d in self.dims for a in d]
        dims, pos = [], 0
        for n in lens:
            group, need = [], n
            while need > 1:
                if pos >= len(flat):
                    return False
                atom = flat[pos]
                s = self.size[atom]
                if s <= need:
                    if need % s:
                        return False
                    group.append(atom)
                    need //= s
                    pos += 1
                    continue
                if s % need:
                    return False
                hi, lo = self._split(atom, need)
                group.append(hi)
                flat[pos] = lo
                need = 1
            dims.append(group)
        if pos != len(flat):
            return False
        self.dims = dims
        return True

    def mergeable(self) -> bool:
        """Whether every axis joins atoms that follow one another, in order, in the source."""
        where = {a: i for i, a in enumerate(self.base)}
        return all(where[b] == where[a] + 1 for d in self.dims for a, b in zip(d, d[1:]))


def _chain(end):
    """(source, steps) for the movement ops ending in ``end``, outermost first."""
    steps, x = [], end
    while x.op in MOVES and x.inputs and _static(x) and _static(x.inputs[0]):
        steps.append(x)
        x = x.inputs[0]
    return x, steps[::-1]


def _follow(source, steps) -> _Atoms | None:
    atoms = _Atoms(source.shape.lens)
    for step in steps:
        if step.op == "Transpose":
            atoms.transpose(step.attrs["perm"])
        elif not atoms.reshape(step.shape.lens):
            return None
    return atoms if atoms.mergeable() else None


def _needs_rewrite(steps) -> bool:
    """Whether a step before the last regroups axes: a merge there may copy (the source's layout
    decides), while the rewritten chain merges only what the result itself joins."""
    return any(step.op != "Transpose" for step in steps[:-1])


def rewrite(module, end) -> bool:
    source, steps = _chain(end)
    if len(steps) < 2 or not _needs_rewrite(steps):
        return False
    atoms = _follow(source, steps)
    if atoms is None:
        return False
    dtype = source.shape.dtype
    split_lens = [atoms.size[a] for a in atoms.base]
    x = module.add_instruction("Reshape", [source], {"shape": split_lens, "allowzero": 0},
                               shape=Shape(dtype, split_lens), before=end)
    order = [a for d in atoms.dims for a in d]
    perm = [atoms.base.index(a) for a in order]
    if perm != list(range(len(perm))):
        x = module.add_instruction("Transpose", [x], {"perm": perm},
                                   shape=Shape(dtype, [atoms.size[a] for a in order]), before=end)
    x = module.add_instruction("Reshape", [x], {"shape": list(end.shape.lens), "allowzero": 0},
                               shape=end.shape, before=end, name=end.name)
    substitute(module, end, x)
    return True


class CollapseViewChains:
    """The pass: each movement chain that would copy partway, but as a whole is a view of its
    source, becomes split, transpose, merge (the left-over steps go to dead-code elimination)."""
    name = "collapse_view_chains"

    def apply(self, mpm) -> None:
        module = mpm.module
        ends = [i for i in module.instructions
                if i.op in MOVES and not (i.users and all(u.op in MOVES for u in i.users))]
        for end in ends:
            rewrite(module, end)
