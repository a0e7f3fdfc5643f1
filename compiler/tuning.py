"""Tuning a compile did in this process: choices it timed and kept in a target's cache, which
a later compile reads instead of timing them again.

A process that tuned is not the process a later compile makes: on an H100 (2026-12-05), the
process that timed its fp32 convolution paths on an empty cache ran its batch-1 rows 2.4-10 %
slower, for as long as it lived, than every later process that read those choices. A benchmark
that wants the compiler's steady figure measures in a process whose compile did no tuning
(``perfbot``'s runner starts a fresh worker after a compile that tuned).
"""
from __future__ import annotations

_count = 0


def noted() -> None:
    """A target has timed a choice and kept it for later compiles."""
    global _count
    _count += 1


def count() -> int:
    """How many choices this process has timed and kept so far."""
    return _count
