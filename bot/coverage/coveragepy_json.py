"""coverage.py's JSON report (``coverage json``): per file, executed and missing line lists and,
with branch measurement, executed/missing arcs ``[from, to]``."""
from __future__ import annotations

import json
from collections import Counter

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import repo_relative


def read_coveragepy_json(path: str, root: str | None = None) -> CoverageReport:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        files = document["files"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise CoverageInputError(f"{path}: not a coverage.py JSON report ({exc.__class__.__name__})") from None
    report = CoverageReport(format="coverage.py json", source=path)
    for name, data in files.items():
        entry = report.file(repo_relative(name, root))
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
    return report
