"""Which GPU each round of a row runs on, and one row's round per GPU at a time.

A ``DevicePool`` lends its devices out one at a time. A row measured in fresh worker processes per
round (``ab``, ``calibrate``, ``run --rounds N``) has its rounds spread over the devices by a seeded
plan: each run of as many rounds as there are devices visits every device once, in an order drawn
anew for every such run from the seed and the row. Both sides of a round (base and head) use the
round's device, so a pair always shares its GPU, and over the rounds every GPU carries both sides
alike: no GPU's speed can pass for a revision's. A row measured in one worker process (a plain
``run``) keeps the device that was free when it started, for all of it.

``SINGLE`` is today's way: no device named, nothing held, the workers see what the runner sees.
"""
from __future__ import annotations

import contextlib
import random
import threading
import zlib

from bot.runner.devices import Device
from bot.runner.session import RowFailure


class DevicePool:
    """The devices of a run; ``take`` waits until the wanted (or any) device is free."""

    def __init__(self, devices: list[Device], seed: int = 0):
        self.devices = list(devices)
        self.seed = seed
        self._free = {d.index for d in devices}
        self._ready = threading.Condition()
        self._closed = False

    @property
    def measuring_cpus(self) -> set[int]:
        return {d.cpu for d in self.devices if d.cpu is not None}

    @contextlib.contextmanager
    def take(self, index: int | None = None):
        """Hold device ``index`` (any free one when None) for the duration of the block;
        ``RowFailure`` once the pool is closed."""
        with self._ready:
            self._ready.wait_for(lambda: self._closed or (
                index in self._free if index is not None else self._free))
            if self._closed:
                raise RowFailure("interrupted before this round's GPU was free")
            chosen = index if index is not None else min(self._free)
            self._free.discard(chosen)
        try:
            yield next(d for d in self.devices if d.index == chosen)
        finally:
            with self._ready:
                self._free.add(chosen)
                self._ready.notify_all()

    def close(self) -> None:
        """No more rounds start: every wait for a device, now or later, fails (an interruption)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def placement(self, row_key: str, spread: bool) -> "RowPlacement":
        return SpreadPlacement(self, row_key) if spread else WholeRowPlacement(self)


class RowPlacement:
    """Where one row's rounds run: ``device_for(i)`` names round i's device ahead (a spare worker
    for round i is started with its environment), ``hold(i)`` holds it while round i runs."""

    spread = False
    measuring_cpus: set[int] = set()

    def device_for(self, index: int) -> Device | None:
        return None

    @contextlib.contextmanager
    def hold(self, index: int):
        yield self.device_for(index)

    @contextlib.contextmanager
    def whole_row(self):
        """Held around the whole row when its rounds do not move between devices."""
        yield

    def again(self, row_key: str) -> "RowPlacement":
        """A placement of the same kind for another measurement of the row (``row_key`` seeds
        its plan), e.g. calibration's check of the detectable change."""
        return self


SINGLE = RowPlacement()


class WholeRowPlacement(RowPlacement):
    """The row stays on whichever device was free when it started (one worker process a side)."""

    def __init__(self, pool: DevicePool):
        self.pool = pool
        self.device: Device | None = None
        self.measuring_cpus = pool.measuring_cpus

    def device_for(self, index: int) -> Device | None:
        return self.device

    def again(self, row_key: str) -> RowPlacement:
        return WholeRowPlacement(self.pool)

    @contextlib.contextmanager
    def whole_row(self):
        with self.pool.take() as device:
            self.device = device
            yield


class SpreadPlacement(RowPlacement):
    """Round i on the device of a seeded, balanced plan (see the module docstring)."""

    spread = True

    def __init__(self, pool: DevicePool, row_key: str):
        self.pool = pool
        self.measuring_cpus = pool.measuring_cpus
        self.random = random.Random(zlib.crc32(row_key.encode()) ^ pool.seed)
        self.plan: list[Device] = []

    def again(self, row_key: str) -> RowPlacement:
        return SpreadPlacement(self.pool, row_key)

    def device_for(self, index: int) -> Device:
        while len(self.plan) <= index:
            cycle = list(self.pool.devices)
            self.random.shuffle(cycle)
            self.plan.extend(cycle)
        return self.plan[index]

    @contextlib.contextmanager
    def hold(self, index: int):
        with self.pool.take(self.device_for(index).index) as device:
            yield device
