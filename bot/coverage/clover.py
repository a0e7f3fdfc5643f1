"""Clover XML (Istanbul's ``clover`` reporter in nyc/c8, PHPUnit, OpenClover): ``<file path>``
elements holding ``<line num count type>``.

Every ``<line>`` is a coverable line, whatever its ``type`` (``stmt``, ``cond``, ``method``), and
it ran when ``count`` > 0, as diff-cover reads Clover; a ``cond`` line's ``truecount`` and
``falsecount`` are its two branch outcomes.
"""
from __future__ import annotations

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles


def _number(line, name: str) -> int:
    return int(float(line.get(name, "0")))


def clover_report(document, path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="clover", source=path)
    repo = RepoFiles(root)
    for item in document.iter("file"):
        name = item.get("path") or item.get("name")
        if not name:
            continue
        entry = report.entry(repo.resolve(name), name)
        for line in item.iter("line"):
            try:
                number, hits = _number(line, "num"), max(_number(line, "count"), 0)
                if line.get("type") == "cond":
                    taken = (_number(line, "truecount") > 0) + (_number(line, "falsecount") > 0)
            except ValueError:
                raise CoverageInputError(f"{path}: Clover XML: malformed <line num={line.get('num')!r} "
                                         f"count={line.get('count')!r}> in {name[:80]!r}") from None
            entry.add_line(number, hits)
            if line.get("type") == "cond":
                entry.add_branch(number, taken, 2)
                report.has_branches = True
    return report


def is_clover(document) -> bool:
    # PHPUnit's writer has no `clover` attribute on the root; its <file><line num count> does tell.
    return document.get("clover") is not None or document.find(".//file/line[@num]") is not None
