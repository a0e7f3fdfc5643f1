"""Concatenations that extend one another fill one buffer.

A DenseNet block concatenates its input with every earlier layer's output before each layer:
``Concat(x, y1)``, ``Concat(x, y1, y2)``, ... ``Concat(x, y1, ..., yL)``. Copied one by one that is
O(L^2) bytes per block (on the H200 DenseNet-121's concatenations took 18 % of its fp32 GPU time,
at copy bandwidth). Here every concatenation whose inputs are a prefix of the longest one's
inputs is a view of one buffer as wide as the longest: the first of them to run allocates it, each
input is copied into its slot once (by the first concatenation that includes it), and every
concatenation returns the leading slice covering its inputs.

That is safe because slot ``j`` always holds the same IR value, each slot is written before any
concatenation covering it returns, and a slot is never written again within a run; consumers of
a shorter concatenation read only slots they cover. Values do not outlive their run's buffer:
the first member allocates a fresh one every run.
"""
from __future__ import annotations


from compiler.ir.shape import Shape

from .kernels import slice_copy
from .kernels.channels_last import pixel_stride


def _axis(ins) -> int:
    rank = ins.shape.ndim
    axis = int(ins.attrs.get("axis", 0))
    return axis + rank if axis < 0 else axis


def _chainable(ins) -> bool:
    return (ins.op == "Concat" and isinstance(ins.shape, Shape) and ins.shape.static
            and all(isinstance(v.shape, Shape) and v.shape.static for v in ins.inputs))


class ConcatChain:
    """The concatenations sharing one buffer: ``longest``'s inputs, slot by slot."""

    def __init__(self, longest, members: list):
        self.axis = _axis(longest)
        self.lens = tuple(longest.shape.lens)
        self.dtype = longest.shape.dtype
        self.offsets = [0]
        for v in longest.inputs:
            self.offsets.append(self.offsets[-1] + int(v.shape.lens[self.axis]))
        order = {ins: pos for pos, ins in enumerate(longest.module.instructions)}
        self.members = sorted(members, key=order.get)
        self.buffer = None      # this run's buffer, logical shape ``lens``
        self.filled = 0         # slots written this run

    def run(self, ins, xs, xp, on_gpu: bool):
        """``ins``'s result: the buffer's leading slice over its ``len(xs)`` inputs."""
        if ins is self.members[0] or self.buffer is None:
            self.buffer = allocate(xp, self.lens, self.dtype, self.axis, xs)
            self.filled = 0
        for j in range(self.filled, len(xs)):
            write(self.buffer, self.axis, self.offsets[j], xs[j], on_gpu)
        self.filled = max(self.filled, len(xs))
        index = [slice(None)] * len(self.lens)
        index[self.axis] = slice(0, self.offsets[len(xs)])
        view = self.buffer[tuple(index)]
        if ins is self.members[-1]:
            self.buffer = None  # the views keep it alive as long as they are used
        return view


def allocate(xp, lens, dtype, axis: int, xs):
    """A concatenation's buffer (logical shape ``lens``): channels-last when its inputs are (a
    rank-4 channel concatenation; copied in logical order each thread stepped C elements, and
    DenseNet-121's concatenations took 44 % of its GPU time on the H200), else packed."""
    if len(lens) == 4 and axis == 1 and all(pixel_stride(x) is not None for x in xs) \
            and not all(x.flags.c_contiguous for x in xs):
        n, c, h, w = lens
        return xp.empty((n, h, w, c), dtype=dtype).transpose(0, 3, 1, 2)
    return xp.empty(tuple(lens), dtype=dtype)


def write(buffer, axis: int, offset: int, x, on_gpu: bool) -> None:
    """Copy ``x`` into ``buffer`` at ``offset`` along ``axis``: channels-last rows row by row (a
    pixel's channels, no per-element index math), anything else as a strided copy (one copy per
    input: CuPy's concatenate of many arrays uploads a table of pointers from the host, which a
    CUDA-graph capture refuses)."""
    width = x.shape[axis]
    if on_gpu and axis == 1 and pixel_stride(buffer) is not None and pixel_stride(x) is not None:
        n, c, h, w = buffer.shape
        rows = buffer.transpose(0, 2, 3, 1).reshape(n * h * w, c)
        slice_copy.into_columns(rows, x.transpose(0, 2, 3, 1).reshape(n * h * w, width), offset)
        return
    index = [slice(None)] * buffer.ndim
    index[axis] = slice(offset, offset + width)
    buffer[tuple(index)] = x


def chains_of(module) -> dict:
    """``find_chains(module)``: the chains the lowering and the memory plan share."""
    return find_chains(module)


def find_chains(module) -> dict:
    """Concat instruction -> its ``ConcatChain``, for chains of two or more members of ``module``.
    Each concatenation joins the chain of the longest one (same axis and type) whose inputs it
    begins; chains of one are left out (a plain concatenation)."""
    concats = [i for i in module.instructions if _chainable(i)]
    groups: list[tuple[object, list]] = []
    for ins in sorted(concats, key=lambda i: -len(i.inputs)):
        for longest, members in groups:
            if (_axis(longest) == _axis(ins) and longest.shape.dtype == ins.shape.dtype
                    and list(longest.inputs[:len(ins.inputs)]) == list(ins.inputs)):
                members.append(ins)
                break
        else:
            groups.append((ins, [ins]))
    chains: dict = {}
    for longest, members in groups:
        if len(members) > 1:
            chain = ConcatChain(longest, members)
            for m in members:
                chains[m] = chain
    return chains
