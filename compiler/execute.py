"""Running a compiled program: feed checking and the call into ``main``'s executable."""
from __future__ import annotations

import numpy as np

from compiler.errors import FeedError


class ExecutionContext:
    """What compiled roots share at run time: every root's executable, by module name."""

    def __init__(self, program):
        self.program = program
        self.roots: dict = {}


class Executable:
    def __init__(self, program, context: ExecutionContext):
        self.program = program
        self.context = context

    def expected(self) -> str:
        return ", ".join(f"{p.name}: {p.shape}" for p in self.program.main.parameters())

    def check_feeds(self, feeds: dict) -> list:
        params = self.program.main.parameters()
        names = [p.name for p in params]
        unknown = sorted(set(feeds) - set(names))
        missing = [n for n in names if n not in feeds]
        if unknown or missing:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(missing))
            if unknown:
                parts.append("unknown " + ", ".join(unknown))
            raise FeedError(f"{'; '.join(parts)}; expected inputs: {self.expected()}")
        args = []
        for p in params:
            value = feeds[p.name]
            dtype = getattr(value, "dtype", None)
            shape = tuple(getattr(value, "shape", ()))
            want = p.shape
            if dtype is None or np.dtype(dtype).name != want.dtype or len(shape) != want.ndim or any(
                    w is not None and w != s for w, s in zip(want.lens, shape)):
                got = f"{np.dtype(dtype).name if dtype is not None else type(value).__name__}{list(shape)}"
                raise FeedError(f"input {p.name!r} is {got}; expected inputs: {self.expected()}")
            args.append(value)
        return args

    def run(self, feeds: dict) -> list:
        args = self.check_feeds(feeds)
        return self.context.roots["main"].run(args)
