"""coverage.py's JSON report (``coverage json``): per file, executed and missing line lists and,
with branch measurement, executed/missing arcs ``[from, to]``.

Every format version so far (1 from coverage.py 5, 2 and 3 from 6 and 7, ``meta.format``) keeps
the line lists with the same meaning; later versions add ``functions``/``classes`` breakdowns,
which repeat the same lines and are not read. Format 1 has no arcs even when branches were
measured (only per-file branch counts in ``summary``), so nothing says which lines are partial:
such a report counts every run line as a hit, and its project figure can be higher than the same
run's ``coverage xml``. Patch coverage does not depend on branches and is the same.
"""
from __future__ import annotations

from collections import Counter

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles


def read_coveragepy_json(document: dict, path: str, root: str | None = None) -> CoverageReport:
    files = document.get("files")
    if not isinstance(files, dict):
        raise CoverageInputError(f"{path}: not a coverage.py JSON report (no \"files\" object)")
    report = CoverageReport(format="coverage.py json", source=path)
    repo = RepoFiles(root)
    try:
        for name, data in files.items():
            entry = report.entry(repo.resolve(name), name)
            for line in data.get("executed_lines", []):
                entry.add_line(int(line), 1)
            for line in data.get("missing_lines", []):
                entry.add_line(int(line), 0)
            if "executed_branches" in data or "missing_branches" in data:
                report.has_branches = True
                taken = Counter(int(src) for src, _ in data.get("executed_branches", []))
                missed = Counter(int(src) for src, _ in data.get("missing_branches", []))
                for line in set(taken) | set(missed):
                    entry.add_branch(line, taken[line], taken[line] + missed[line])
    except (AttributeError, TypeError, ValueError) as exc:
        raise CoverageInputError(f"{path}: malformed coverage.py JSON report ({exc.__class__.__name__} "
                                 f"in file entry {str(name)[:80]!r})") from None
    return report
