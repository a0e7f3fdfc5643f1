"""The coverage of a change from the files ``perfbot report`` is given: the head's report, the
base's if any, and the change as git computes it or as a diff file."""
from __future__ import annotations

from .figures import CoverageResult, compare_coverage
from .gitdiff import diff_from_file, diff_from_git
from .readers import read_report


def coverage_of_change(head_report: str, base_report: str | None = None, git_range: str | None = None,
                       diff_file: str | None = None, repo: str = ".") -> CoverageResult:
    """Report paths are taken relative to the diff's repository root when the diff has one,
    else to ``repo``; without a change, no line counts as added."""
    diff = None
    if git_range:
        diff = diff_from_git(git_range, repo=repo)
    elif diff_file:
        diff = diff_from_file(diff_file)
    root = diff.root if diff is not None and diff.root else repo
    head = read_report(head_report, root=root)
    base = read_report(base_report, root=root) if base_report else None
    return compare_coverage(head, base, diff)
