"""Running a compiled program: feed checking and the call into ``main``'s executable.

``Program.run`` always takes and returns host NumPy arrays. When ``main`` itself is a device
root compiled with offload_copy off, its interface is device memory: ``run`` copies the feeds in,
supplies the output buffers (``main:#output_<i>``) and copies the results out;
``Executable.run_raw`` calls ``main`` as it is (device arguments, buffers included).
"""
from __future__ import annotations

import numpy as np

from compiler.errors import FeedError
from compiler.ops.registry import quiet_ieee
from compiler.passes.offload_copy import is_output_parameter


class ExecutionContext:
    """What compiled roots share at run time: every root's executable, by module name."""

    def __init__(self, program):
        self.program = program
        self.roots: dict = {}


class Executable:
    def __init__(self, program, context: ExecutionContext, options=None):
        self.program = program
        self.context = context
        self.options = options

    def inputs(self) -> list:
        return [p for p in self.program.main.parameters() if not is_output_parameter(p)]

    def expected(self) -> str:
        return ", ".join(f"{p.name}: {p.shape}" for p in self.inputs())

    def check_feeds(self, feeds: dict) -> list:
        params = self.inputs()
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

    def run_raw(self, args: list) -> list:
        with quiet_ieee():
            return self.context.roots["main"].run(args)

    def device_interface(self) -> bool:
        """Whether ``main`` takes device memory: a device root compiled with offload_copy off."""
        from compiler.targets.base import get_target
        target = get_target(self.program.roots["main"])
        return not target.host and self.options is not None and not self.options.offload_copy

    def device_arguments(self, feeds: dict) -> list:
        """``run_raw``'s arguments for ``feeds`` (host arrays): with a device interface the
        feeds copied to the device and fresh output buffers, otherwise the feeds as they are.
        Calling ``run_raw`` again with the same list runs on the same buffers."""
        from compiler.targets.base import get_target
        args = self.check_feeds(feeds)
        if not self.device_interface():
            return args
        target = get_target(self.program.roots["main"])
        supplied = iter(target.to_device(a) for a in args)
        return [target.allocate(p.shape) if is_output_parameter(p) else next(supplied)
                for p in self.program.main.parameters()]

    def run(self, feeds: dict) -> list:
        from compiler.targets.base import get_target
        values = self.run_raw(self.device_arguments(feeds))
        if not self.device_interface():
            return values
        target = get_target(self.program.roots["main"])
        return [target.from_device(v) for v in values]
