"""Measuring a suite's rows side by side on several GPUs (``--devices``), longest first.

One thread per device takes the next row from a queue ordered longest first, from the time each
row took in the newest stored run of the target (its ``wall_s``, else its compile time): the
classic longest-processing-time rule, so that no GPU is left with a long row at the end while the
others idle. Rows the store has never seen go first, in suite order: one of them may be the
longest of all, and once measured its time is known for the next run. Each row's rounds run on
the devices its ``placement`` names (``bot.runner.placement``), one row's round per device at a
time; every finished row is handed to ``record`` under one lock (the store and the display are
shared), with its position in the suite so that the run keeps the suite's order.

Without a pool (no ``--devices``) the rows run one after another in suite order, as they always
did.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from bot.runner.placement import SINGLE, DevicePool, RowPlacement
from bot.runner.session import kill_live_workers
from bot.runner.sides import row_key

Key = tuple[str, int, str]


def key_of(row) -> Key:
    return row.name, int(row.batch), row.mode


def longest_first(rows: list, costs: dict[Key, float]) -> list:
    """The rows without a known cost in their own order, then the others, longest first (ties
    in suite order)."""
    unknown = [r for r in rows if key_of(r) not in costs]
    known = [r for r in rows if key_of(r) in costs]
    return unknown + sorted(known, key=lambda r: -costs[key_of(r)])


def device_pool(spec: str | None, target: str, seed: int) -> DevicePool | None:
    """The pool of ``--devices SPEC`` on ``target``; None without the option."""
    from bot.runner.devices import choose

    devices = choose(spec, target)
    return DevicePool(devices, seed) if devices else None


def suite_positions(rows: list) -> dict[Key, int]:
    """Each row's 1-based place in the suite: where the store puts it, whenever it finishes."""
    return {key_of(row): place for place, row in enumerate(rows, start=1)}


def measure_rows(rows: list, pool: DevicePool | None, spread: bool,
                 measure: Callable[[object, RowPlacement], object],
                 record: Callable[[object, object], None],
                 costs: dict[Key, float] | None = None) -> None:
    """``measure(row, placement)`` every row, and ``record(row, result)`` each as it finishes.
    ``spread``: the rows' rounds move between devices (fresh worker processes every round)."""
    if pool is None:
        for row in rows:
            record(row, measure(row, SINGLE))
        return
    lock, stopping = threading.Lock(), threading.Event()

    def one(row) -> None:
        result = measure(row, pool.placement(row_key(row), spread))
        with lock:
            if not stopping.is_set():  # a row cut short by an interruption is not recorded
                record(row, result)

    threads = ThreadPoolExecutor(max_workers=len(pool.devices), thread_name_prefix="perfbot-device")
    try:
        # Submitted longest first: the pool's threads take them in that order as they free up.
        futures = [threads.submit(one, row) for row in longest_first(rows, costs or {})]
        for future in futures:
            future.result()  # a bug in one row's thread is raised here, not lost
    except BaseException:
        # Interrupted (Ctrl-C) or a bug: the rows not started are dropped and those in flight
        # on the other devices are ended now (their workers killed), not measured to the end;
        # what was recorded stays, and --resume measures the rest.
        with lock:
            stopping.set()
        threads.shutdown(wait=False, cancel_futures=True)
        pool.close()
        kill_live_workers()
        raise
    finally:
        threads.shutdown(wait=True)
