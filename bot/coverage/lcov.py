"""LCOV tracefiles (``.info``): ``SF:`` starts a file, ``DA:line,hits`` is a line,
``BRDA:line,block,branch,taken`` a branch outcome (``-`` = never reached), ``end_of_record`` ends it."""
from __future__ import annotations

from .errors import CoverageInputError
from .model import CoverageReport, FileCoverage
from .paths import repo_relative


def read_lcov(path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="lcov", source=path)
    current: FileCoverage | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for lineno, raw in enumerate(handle, 1):
                tag, _, value = raw.strip().partition(":")
                if tag == "SF":
                    current = report.file(repo_relative(value, root))
                elif tag == "end_of_record":
                    current = None
                elif tag in ("DA", "BRDA"):
                    if current is None:
                        raise CoverageInputError(f"{path}:{lineno}: {tag} record outside an SF: section")
                    fields = value.split(",")
                    if tag == "DA":
                        current.add_line(int(fields[0]), int(float(fields[1])))
                    else:
                        taken = fields[3]
                        covered = 1 if taken not in ("-", "0") else 0
                        current.add_branch(int(fields[0]), covered, 1)
                        report.has_branches = True
    except (ValueError, IndexError):
        raise CoverageInputError(f"{path}:{lineno}: malformed LCOV record {raw.strip()[:80]!r}") from None
    if not report.files:
        raise CoverageInputError(f"{path}: no SF: records; not an LCOV tracefile")
    return report
