"""A concatenation followed by a channel shuffle made one ``interleave``:

    Concat(x_0 .. x_{g-1}, axis=a) -> Reshape (split a into (g, k)) -> Transpose (swap those two)
    -> Reshape (merge them back)

where every ``x_j`` is k wide along ``a`` becomes ``interleave(x_0 .. x_{g-1}, axis=a)``: result
index ``i * g + j`` along ``a`` is ``x_j``'s index ``i``. That is ShuffleNet's unit as PyTorch
exports it (``torch.cat`` then ``channel_shuffle``). Run step by step it is two copies of the
block's tensor, the concatenation and the merge of the transposed view; the interleave is one,
written straight into the shuffled order. A chain whose middle values have other users, or whose
inputs are not of one width, is left alone.
"""
from __future__ import annotations

from compiler.ir.shape import Shape
from compiler.passes.rewrite import only_user


def _static(ins) -> bool:
    return isinstance(ins.shape, Shape) and ins.shape.static


def match(concat):
    """The last Reshape of the shuffle after ``concat``, or None when there is none."""
    split = only_user(concat, "Reshape")
    swap = only_user(split, "Transpose") if split is not None else None
    merge = only_user(swap, "Reshape") if swap is not None else None
    if merge is None or not all(_static(i) for i in (concat, split, merge, *concat.inputs)):
        return None
    a, g = concat.attrs["axis"], len(concat.inputs)
    lens = tuple(concat.shape.lens)
    k = concat.inputs[0].shape.lens[a]
    if g < 2 or any(x.shape.lens[a] != k for x in concat.inputs):
        return None
    perm = list(range(len(lens) + 1))
    perm[a], perm[a + 1] = a + 1, a
    if (tuple(split.shape.lens) != lens[:a] + (g, k) + lens[a + 1:]
            or list(swap.attrs["perm"]) != perm or tuple(merge.shape.lens) != lens):
        return None
    return merge


class RecognizeInterleave:
    name = "recognize_interleave"

    def apply(self, mpm) -> None:
        module = mpm.module
        for concat in [i for i in module.instructions if i.op == "Concat"]:
            merge = match(concat)
            if merge is None:
                continue
            fused = module.add_instruction("interleave", list(concat.inputs), {"axis": concat.attrs["axis"]},
                                           shape=merge.shape, before=merge, name=merge.name)
            module.replace_instruction(merge, fused)
            # the chain's instructions now have no users; dead code elimination removes them
