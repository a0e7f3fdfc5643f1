"""Coverage of a change: read reports (Cobertura, Clover and JaCoCo XML, LCOV, coverage.py,
gcovr and llvm-cov JSON, Go coverage profiles; from coverage.py, gcovr, lcov, c8, nyc, JaCoCo,
llvm-cov, go test and the like), find the added lines (git diff), and compute the project, patch
and per-file figures the coverage comment shows.

Report paths are brought to the repository's spelling (``paths``), so reports made in another
directory, a build tree or on a CI machine pair with the diff.

Readers, diff and figures are kept apart (as diff-cover keeps them) so each can be tested alone.
"""
from .errors import CoverageInputError
from .figures import CoverageResult, ImpactedFile, Totals, compare_coverage, totals_of
from .gitdiff import ChangedLines, diff_from_file, diff_from_git, parse_diff
from .model import CoverageReport, FileCoverage
from .readers import read_report

__all__ = [
    "ChangedLines", "CoverageInputError", "CoverageReport", "CoverageResult", "FileCoverage",
    "ImpactedFile", "Totals", "compare_coverage", "diff_from_file", "diff_from_git", "parse_diff",
    "read_report", "totals_of",
]
