"""llvm-cov's JSON export (``llvm-cov export -format=text``; ``cargo llvm-cov --json`` for Rust,
Swift and clang's source-based coverage): per file, ``segments`` of
``[line, column, count, has_count, is_region_entry, is_gap_region]`` (the gap flag is absent in
format 2.0.0) and ``branches`` of ``[line, column, end_line, end_column, true_count,
false_count, ...]``; a macro's branches sit under ``expansions``, each at its
``source_region``.

Lines follow llvm-cov's own line statistics (what ``llvm-cov export -format=lcov`` writes from
the same data), so the figures equal those of the LCOV export: walking the lines from the first
segment to the last, a line is coverable when a counted region starts on it or a counted region
wraps into it from an earlier line, unless it opens a skipped region; its count is the largest of
the wrapping region's and those of the regions that start on it. Each branch is two outcomes
(true and false), on its first line or at its expansion's site.
"""
from __future__ import annotations

from collections import defaultdict

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles

FORMAT = "llvm.coverage.json.export"


def is_llvm_cov_json(document: dict) -> bool:
    return document.get("type") == FORMAT


def _segment(raw) -> tuple[int, int, bool, bool, bool]:
    """(line, count, has_count, is_region_entry, is_gap_region)."""
    gap = bool(raw[5]) if len(raw) > 5 else False
    return int(raw[0]), int(raw[2]), bool(raw[3]), bool(raw[4]), gap


def line_counts(segments: list) -> dict[int, int]:
    """Coverable line -> count, by llvm-cov's line statistics (see the module docstring)."""
    segs = [_segment(s) for s in segments]
    counts: dict[int, int] = {}
    if not segs:
        return counts
    wrapped = None
    k = 0
    for line in range(segs[0][0], segs[-1][0] + 1):
        on_line = []
        while k < len(segs) and segs[k][0] == line:
            on_line.append(segs[k])
            k += 1
        starts = [s for s in on_line if s[2] and s[3] and not s[4]]
        opens_skipped = bool(on_line) and not on_line[0][2] and on_line[0][3]
        if not opens_skipped and ((wrapped is not None and wrapped[2]) or starts):
            counts[line] = max([wrapped[1] if wrapped is not None else 0] + [s[1] for s in starts])
        if on_line:
            wrapped = on_line[-1]
    return counts


def _branch_outcomes(item: dict) -> dict[int, list[int]]:
    """Line -> the counts of its branch outcomes (true, false of each branch)."""
    outcomes: dict[int, list[int]] = defaultdict(list)
    for branch in item.get("branches") or []:
        outcomes[int(branch[0])] += [int(branch[4]), int(branch[5])]
    for expansion in item.get("expansions") or []:
        site = int(expansion["source_region"][0])
        for branch in expansion.get("branches") or []:
            outcomes[site] += [int(branch[4]), int(branch[5])]
    return outcomes


def read_llvm_cov_json(document: dict, path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="llvm-cov json", source=path)
    repo = RepoFiles(root)
    try:
        for export in document.get("data") or []:
            for item in export.get("files") or []:
                name = item["filename"]
                entry = report.entry(repo.resolve(name), name)
                for line, count in line_counts(item.get("segments") or []).items():
                    entry.add_line(line, count)
                for line, counts in _branch_outcomes(item).items():
                    entry.add_branch(line, sum(1 for c in counts if c > 0), len(counts))
                    report.has_branches = True
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise CoverageInputError(f"{path}: malformed llvm-cov JSON export ({exc.__class__.__name__}: "
                                 f"{str(exc)[:80]})") from None
    return report
