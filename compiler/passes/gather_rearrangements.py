"""A rearrangement of one value made a single gather of its rows.

Exporters spell some rearrangements as several movement ops. torch.roll becomes two Slices and a
Concat per rolled axis, and Swin's shifted windows roll the image and then partition it into
windows (Reshape, Transpose, Reshape); the reverse partition and the roll back come after the
attention. Run op by op, every Concat and every merge of a transposed view is a copy of the whole
tensor. Yet every element of the result is an element of the one source, so the region is one
gather. Which element goes where is found at compile time: the region is run on the source's
row numbers (one a row of the last axis, where the region leaves that axis alone, as a roll and
partition of channels-last pixels do) or else its element numbers, with the ops' reference compute.

    src -> [Slice | Concat | Reshape | Transpose | Squeeze | Unsqueeze | Flatten]* -> out
      becomes
    Reshape(src, (rows, run)) -> Gather(axis 0, literal row numbers) -> Reshape(out's lengths)

``run`` is the longest run of consecutive source elements the map keeps together (the channels,
when channels are last and the rearrangement moves pixels), so the gather moves whole rows.

A region starts at a Concat (the last one first) and takes in every movement op above it whose
readers are all in the region, and the chain of single readers below it. It is rewritten when it
reads one value, holds at least two copies (Concats and Transposes) and its map moves runs of at
least ``MIN_RUN`` elements that start on a run boundary of the source. A value read outside the
region bounds it: what lies below that value is gathered from it. A region with a second source
(ShuffleNet's concatenation of two branches) is left alone.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape
from compiler.ops.registry import get_op

MOVEMENT = ("Slice", "Concat", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten")
COPIES = ("Concat", "Transpose")
MIN_RUN = 4                 # shorter runs would read an index for every few elements
MAX_ELEMENTS = 1 << 31      # element numbers of the source fit in int32


def _static(ins) -> bool:
    return isinstance(ins.shape, Shape) and ins.shape.static


def _data_inputs(ins) -> list:
    return [i for i in ins.inputs if i.op != LITERAL]


def _movement(ins) -> bool:
    return ins.op in MOVEMENT and _static(ins) and len(ins.users) > 0


def region_of(concat) -> tuple[list, object, object] | None:
    """(the region's instructions in program order, its source, its last value) around
    ``concat``, or None when it reads more than one value."""
    region = {concat}
    out = concat
    while len(out.users) == 1 and _movement(out.users[0]) \
            and all(i in region for i in _data_inputs(out.users[0])):
        out = out.users[0]
        region.add(out)
    grew = True
    while grew:     # movement ops above whose every reader is in the region join it
        grew = False
        for ins in list(region):
            for value in _data_inputs(ins):
                if value not in region and _movement(value) and all(u in region for u in value.users):
                    region.add(value)
                    grew = True
    sources = {v for ins in region for v in _data_inputs(ins) if v not in region}
    if len(sources) != 1 or not all(_static(i) for i in region):
        return None
    (src,) = sources
    if not _static(src):
        return None
    order = [i for i in concat.module.instructions if i in region]
    return order, src, out


def _evaluate(order, src, first: np.ndarray, out, step) -> np.ndarray:
    """The region run on ``first`` (numbers standing for the source's elements or rows),
    ``step(ins, args)`` giving each value; a value is dropped once its last reader in the region
    has run, so a large activation costs a few copies of itself at compile time."""
    readers: dict = {}
    for ins in order:
        for i in ins.inputs:
            readers[id(i)] = readers.get(id(i), 0) + 1
    values = {id(src): first}
    for ins in order:
        args = [values[id(i)] if id(i) in values else np.asarray(i.value) for i in ins.inputs]
        values[id(ins)] = step(ins, args)
        for i in ins.inputs:
            readers[id(i)] -= 1
            if readers[id(i)] == 0 and i is not out:
                values.pop(id(i), None)
    return values[id(out)]


def _computed(ins, args) -> np.ndarray:
    return np.asarray(get_op(ins.op).compute(ins.attrs, *args))


def element_map(order, src, out) -> np.ndarray:
    """For every element of ``out``, the flat number of the source element it holds (int32:
    sources have fewer than ``MAX_ELEMENTS``)."""
    first = np.arange(src.shape.elements(), dtype=np.int32).reshape(src.shape.lens)
    return _evaluate(order, src, first, out, _computed)


RESHAPES = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def _row_step(ins, args) -> np.ndarray:
    if ins.op in RESHAPES:      # a pure reshape that keeps rows whole: to its own lengths
        return args[0].reshape(tuple(ins.shape.lens[:-1]) + (1,))
    return _computed(ins, args)  # Slice, Concat, Transpose: on other axes, at any width


def row_map(order, src, out) -> np.ndarray | None:
    """The map at the level of whole rows of the last axis, where the region never touches that
    axis (every value in it ends in the source's last length, and Transposes keep it last): for
    every row of ``out`` (its lengths less the last), the flat number of the source row it holds.
    Run on one number a row, it costs what the rows do, not what the elements do; None where the
    region does touch the last axis (``element_map`` then)."""
    width = src.shape.lens[-1]
    if src.shape.ndim < 2 or out.shape.ndim < 2:
        return None
    for ins in order:
        if ins.shape.ndim < 2 or ins.shape.lens[-1] != width:
            return None
        if ins.op == "Transpose" and list(ins.attrs["perm"])[-1] != ins.shape.ndim - 1:
            return None
    rows = int(np.prod(src.shape.lens[:-1], dtype=np.int64))
    first = np.arange(rows, dtype=np.int32).reshape(tuple(src.shape.lens[:-1]) + (1,))
    return _evaluate(order, src, first, out, _row_step).reshape(tuple(out.shape.lens[:-1]))


def row_run(index: np.ndarray) -> int:
    """The longest trailing block of ``index`` (a product of its last lengths) whose rows are
    runs of consecutive numbers that start on a multiple of the block; 1 if none."""
    best = 1
    lens = index.shape
    for k in range(len(lens) - 1, -1, -1):
        run = int(np.prod(lens[k:], dtype=np.int64))
        rows = index.reshape(-1, run)
        starts = rows[:, :1]
        if not (np.array_equal(rows - starts, np.broadcast_to(np.arange(run), rows.shape))
                and not (starts % run).any()):
            break
        best = run
    return best


def rewrite(module, order, src, out) -> bool:
    """Put the gather where ``out`` was; the region's instructions lose their readers and dead
    code elimination removes them. False when the map does not move whole runs."""
    n_src = src.shape.elements()
    if n_src >= MAX_ELEMENTS:
        return False
    index, width = row_map(order, src, out), src.shape.lens[-1]
    if index is None:
        index, width = element_map(order, src, out), 1
    block = row_run(index)              # in rows of ``width`` elements
    run = block * width
    if run < MIN_RUN:
        return False
    rows = index.reshape(-1, block)[:, 0] // block
    dtype = src.shape.dtype
    flat = module.add_instruction("Reshape", [src], {"shape": [n_src // run, run], "allowzero": 0},
                                  shape=Shape(dtype, (n_src // run, run)), before=out)
    numbers = module.add_literal(rows.astype(np.int64), before=out)
    gathered = module.add_instruction("Gather", [flat, numbers], {"axis": 0},
                                      shape=Shape(dtype, (len(rows), run)), before=out)
    result = module.add_instruction("Reshape", [gathered], {"shape": list(out.shape.lens), "allowzero": 0},
                                    shape=out.shape, before=out, name=out.name)
    module.replace_instruction(out, result)
    return True


class GatherRearrangements:
    name = "gather_rearrangements"

    def apply(self, mpm) -> None:
        module = mpm.module
        taken: set = set()
        # the last Concat first: its region reaches up through the earlier ones (both axes of a
        # roll), where the first one's would stop at the readers of its own result
        for concat in reversed([i for i in module.instructions if i.op == "Concat"]):
            if concat in taken or not _static(concat):
                continue
            found = region_of(concat)
            if found is None:
                continue
            order, src, out = found
            if sum(i.op in COPIES for i in order) < 2:
                continue
            if rewrite(module, order, src, out):
                taken.update(order)
