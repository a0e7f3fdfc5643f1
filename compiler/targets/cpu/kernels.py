"""Kernel choice for the CPU target: a fast kernel where one exists, else the reference."""
from __future__ import annotations

from .plan import reference_kernel

FAST: dict = {}


def pick_kernel(ins):
    factory = FAST.get(ins.op)
    kernel = factory(ins) if factory else None
    return kernel or reference_kernel(ins)
