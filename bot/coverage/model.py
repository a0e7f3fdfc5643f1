"""What a coverage report says about each source file, whatever format it came in."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FileCoverage:
    """Line and branch coverage of one source file.

    ``lines`` maps each coverable line number to its hit count; ``branches`` maps a line that
    branches to ``(covered, total)`` outcomes. Lines absent from ``lines`` are not coverable
    (blank, comments, excluded), so they never count as hits or misses.
    """

    path: str
    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[int, tuple[int, int]] = field(default_factory=dict)

    def add_line(self, number: int, hits: int) -> None:
        # Several report entries can describe the same line (gcovr lists template instances,
        # LCOV may repeat a file); a line is hit when any of them hit it.
        self.lines[number] = self.lines.get(number, 0) + max(hits, 0)

    def add_branch(self, number: int, covered: int, total: int) -> None:
        # A line described twice (a header's inline function in two compilation units of a
        # Cobertura or gcovr JSON report) has the same outcomes twice, not twice as many: keep the
        # best description of it rather than the sum, which would turn "2 of 2" into "3 of 4".
        # (LCOV names each outcome, so its reader merges them exactly before calling this once.)
        old_covered, old_total = self.branches.get(number, (0, 0))
        self.branches[number] = (max(old_covered, covered), max(old_total, total))

    def is_partial(self, number: int) -> bool:
        """A hit line whose branches were not all taken (Codecov's "partial")."""
        covered, total = self.branches.get(number, (0, 0))
        return self.lines.get(number, 0) > 0 and covered < total


@dataclass
class CoverageReport:
    """All files of one report; ``has_branches`` says whether branch data was present."""

    files: dict[str, FileCoverage] = field(default_factory=dict)
    has_branches: bool = False
    format: str = ""
    source: str = ""
    # System files the report named (compiler and SDK headers) and the readers left out.
    dropped: list[str] = field(default_factory=list)

    def file(self, path: str) -> FileCoverage:
        if path not in self.files:
            self.files[path] = FileCoverage(path)
        return self.files[path]

    def entry(self, resolved: str | None, written: str) -> FileCoverage:
        """The entry of a resolved path; for a system file (``None``) a throwaway one, noted."""
        if resolved is None:
            self.dropped.append(written)
            return FileCoverage(written)
        return self.file(resolved)
