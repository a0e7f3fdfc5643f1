"""Shapes: the static type of a value in the IR (element type, lengths, strides)."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


def _standard_strides(lens: tuple[int | None, ...]) -> tuple[int | None, ...]:
    strides: list[int | None] = []
    step: int | None = 1
    for n in reversed(lens):
        strides.append(step)
        step = None if (step is None or n is None) else step * max(n, 1)
    return tuple(reversed(strides))


@functools.lru_cache(maxsize=None)
def dtype_name(dtype) -> str:
    """NumPy's name of a dtype given as a name, a dtype or a scalar type (one lookup per kind: a
    large model makes tens of thousands of shapes, and ``np.dtype(x).name`` is slow)."""
    return np.dtype(dtype).name


@dataclass(frozen=True)
class Shape:
    """A tensor type. ``dtype`` is a NumPy dtype name ("float32", "int64", "bool", ...).

    ``lens`` are the dimension lengths; ``None`` marks a length only known at run time (a Loop's
    scan output, say). ``strides`` are in elements; omitted, they are the standard (row-major,
    packed) ones. A layout pass may give other strides (NHWC storage of an NCHW value).
    """

    dtype: str
    lens: tuple[int | None, ...]
    strides: tuple[int | None, ...] = field(default=None)  # type: ignore[assignment]

    def __post_init__(self):
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        object.__setattr__(self, "lens", tuple(None if n is None else int(n) for n in self.lens))
        if self.strides is None:
            object.__setattr__(self, "strides", _standard_strides(self.lens))
        else:
            object.__setattr__(self, "strides", tuple(self.strides))

    @classmethod
    def of(cls, array) -> "Shape":
        return cls(dtype_name(array.dtype), tuple(array.shape))

    @property
    def ndim(self) -> int:
        return len(self.lens)

    @property
    def static(self) -> bool:
        return all(n is not None for n in self.lens)

    def elements(self) -> int:
        if not self.static:
            raise ValueError(f"shape {self} has run-time lengths")
        return int(np.prod(self.lens, dtype=np.int64))

    def bytes(self) -> int:
        return self.elements() * np.dtype(self.dtype).itemsize

    def standard(self) -> bool:
        return self.strides == _standard_strides(self.lens)

    def with_dtype(self, dtype: str) -> "Shape":
        return Shape(dtype, self.lens) if self.standard() else Shape(dtype, self.lens, self.strides)

    def __str__(self) -> str:
        dims = ",".join("?" if n is None else str(n) for n in self.lens)
        text = f"{self.dtype}[{dims}]"
        if not self.standard():
            text += "{" + ",".join("?" if s is None else str(s) for s in self.strides) + "}"
        return text


@dataclass(frozen=True)
class TupleShape:
    """The type of an instruction with several results (Split, TopK, LSTM, run_on_target)."""

    elements: tuple[Shape, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(s) for s in self.elements) + ")"

    def __len__(self) -> int:
        return len(self.elements)

    def __getitem__(self, i: int) -> Shape:
        return self.elements[i]
