"""Where a compiled program's time goes: time per IR instruction (or fused kernel), per root.

``profile(program, feeds, runs)`` replays the program ``runs`` times with a clock around every
step of every root that exposes its steps (the ``ref`` and ``cpu`` plans: a list ``steps`` of
``(instruction or slot, callable, inputs, ...)``; a gpu root through ``stepwise()``, which runs it
eagerly instead of replaying its CUDA graphs), and around the whole run of any other root (one
entry named after the root). A root with a ``step_clock()`` (a gpu root) times each step with it:
the device's own time for the step's kernels, each step replayed as a CUDA graph of its own where
it can be recorded; elsewhere the host's clock stops after the target's
``synchronize()``, if it has one, so each step's work is counted at the step that started it. The
replay is a profiling run, not the measured rate: the clock around each step costs about a
microsecond on the host and a hold of the device on the gpu. Measure rates before profiling, not
after: on an H100, after one profile a process replayed ResNet-50 batch 1 in 600 us against
545 us before, and stayed there (an eager run of a program's steps beyond its first leaves the
process so; benchmarks/RESULTS.md, section 6).

Calls into other roots (``run_on_target``) and control-flow bodies are not entries of their
own: a callee's steps are entries of the callee, and a body's time is its If/Loop's.
Each entry names the instruction (its ONNX node name, which fusion keeps from the node that
roots the fused kernel), its op and the root it ran in.

``run_seconds(program, feeds)`` is what the entries should add up to: the median time of a whole
run as the program runs it (a gpu root replaying its CUDA graphs), host-timed to the targets'
synchronisation.
"""
from __future__ import annotations

import statistics
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from compiler.targets.base import get_target


@dataclass
class Entry:
    root: str
    name: str
    op: str
    calls: int = 0
    total_s: float = 0.0

    def as_dict(self, runs: int) -> dict:
        return {"root": self.root, "name": self.name, "op": self.op,
                "calls": self.calls // max(runs, 1), "mean_us": self.total_s / max(runs, 1) * 1e6}


def _instruction_of(plan, key):
    """A step's instruction: the ref plan keys steps by instruction, the cpu plan by slot."""
    if hasattr(key, "op"):
        return key
    slots = getattr(plan, "_profile_slots", None)
    if slots is None:
        slots = plan._profile_slots = {k: ins for ins, k in plan.slot.items()}
    return slots[key]


class HostClock:
    """The host's clock around a step, stopped after the target has finished it."""

    def __init__(self, sync):
        self.sync = sync
        self._start = 0.0

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self) -> float:
        self.sync()
        return time.perf_counter() - self._start

    def time_step(self, fn, args):
        """(``fn(*args)``, the seconds it took up to the target's synchronisation)."""
        self.start()
        value = fn(*args)
        return value, self.stop()


def _clock(target, exe):
    """The root's own step clock where it has one (a gpu root on a device), else the host's."""
    found = exe.step_clock() if hasattr(exe, "step_clock") else None
    return found or HostClock(getattr(target, "synchronize", lambda: None))


def _timed(fn, entry: Entry, clock):
    """``fn`` timed by ``clock`` (``HostClock``, or a root's own, which may replay the step as a
    graph of its own)."""
    def run(*args):
        value, seconds = clock.time_step(fn, args)
        entry.total_s += seconds
        entry.calls += 1
        return value
    return run


def _step_plan(root_exe):
    """The plan whose ``steps`` a root runs (a cpu root wraps its plan), or None."""
    plan = getattr(root_exe, "plan", root_exe)
    return plan if isinstance(getattr(plan, "steps", None), list) else None


@contextmanager
def _instrumented(context, root_names: dict[str, str], entries: list[Entry]):
    """Every root's steps (or its run) wrapped in a clock for the duration; restored after."""
    restore = []
    with ExitStack() as stepwise:
        try:
            for name, exe in context.roots.items():
                target = get_target(root_names[name])
                clock = _clock(target, exe)
                plan = stepwise.enter_context(exe.stepwise()) if hasattr(exe, "stepwise") else _step_plan(exe)
                if plan is None:
                    entry = Entry(name, name, f"{target.name} root")
                    entries.append(entry)
                    restore.append((exe, "run", exe.run))
                    exe.run = _timed(exe.run, entry, clock)
                    continue
                restore.append((plan, "steps", plan.steps))
                plan.steps = [_wrap_step(plan, step, name, clock, entries) for step in plan.steps]
            yield
        finally:
            for owner, attr, value in reversed(restore):
                if attr == "run":
                    del owner.run          # the instance attribute hid the class's method
                else:
                    setattr(owner, attr, value)


def _wrap_step(plan, step, root: str, clock, entries: list[Entry]):
    key, fn, *rest = step
    ins = _instruction_of(plan, key)
    if ins.op == "run_on_target":
        return step                    # the callee's own steps are timed
    entry = Entry(root, ins.name or f"%{ins.uid}", ins.op)
    entries.append(entry)
    return (key, _timed(fn, entry, clock), *rest)


@dataclass(frozen=True)
class Placed:
    """Feeds already where the compiled program reads them (``place``), so that a profile and a
    whole-run timing of one program copy them there once."""
    args: list


def place(program, feeds: dict) -> Placed:
    """``feeds`` as the compiled program's ``run_raw`` arguments (on the device where it takes
    device memory), for ``profile`` and ``run_seconds`` to share."""
    return Placed(_runnable(program, feeds)[1])


def _runnable(program, feeds):
    """The compiled program and its ``run_raw`` arguments for ``feeds`` (host arrays by input
    name, or ``Placed``)."""
    executable = program.compiled
    if executable is None:
        raise ValueError("compile the program before running it")
    if isinstance(feeds, Placed):
        return executable, feeds.args
    return executable, executable.device_arguments(feeds)


def profile(program, feeds, runs: int = 3, warmup: int = 1) -> list[dict]:
    """Mean time per run of each instruction of a compiled program, slowest first:
    ``{"root", "name", "op", "calls", "mean_us"}`` (calls per run)."""
    executable, args = _runnable(program, feeds)
    for _ in range(warmup):
        executable.run_raw(args)
    entries: list[Entry] = []
    with _instrumented(executable.context, program.roots, entries):
        executable.run_raw(args)   # settles the clocks (a gpu step clock's hold); not counted
        for entry in entries:
            entry.calls, entry.total_s = 0, 0.0
        for _ in range(runs):
            executable.run_raw(args)
    found = [e.as_dict(runs) for e in entries if e.calls]
    return sorted(found, key=lambda e: -e["mean_us"])


def run_seconds(program, feeds, runs: int = 20, warmup: int = 2) -> float:
    """Median seconds of one whole uninstrumented run of the compiled program, each run timed on
    the host up to every root's target having finished it."""
    executable, args = _runnable(program, feeds)
    syncs = [sync for sync in (getattr(get_target(t), "synchronize", None) for t in set(program.roots.values()))
             if sync is not None]

    def finish():
        for sync in syncs:
            sync()
    for _ in range(warmup):
        executable.run_raw(args)
    finish()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        executable.run_raw(args)
        finish()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
