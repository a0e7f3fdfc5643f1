"""What the coverage renderers read from a coverage comparison. The bot computes it (its
``CoverageResult``, ``Totals`` and ``ImpactedFile`` dataclasses have these fields); the
renderers only read them, so any object that has them will do."""
from __future__ import annotations

from typing import Protocol, Sequence


class Totals(Protocol):
    files: int
    lines: int
    hits: int
    misses: int
    partials: int
    branches: int
    has_branches: bool

    @property
    def coverage(self) -> float | None: ...


class ImpactedFile(Protocol):
    path: str
    head_pct: float | None
    in_diff: bool

    @property
    def patch_pct(self) -> float | None: ...

    @property
    def delta(self) -> float | None: ...


class CoverageResult(Protocol):
    head: Totals
    base: Totals | None
    files: Sequence[ImpactedFile]
    base_name: str | None
    base_commit: str | None
    head_name: str | None
    head_commit: str | None

    @property
    def patch_pct(self) -> float | None: ...

    @property
    def delta(self) -> float | None: ...
