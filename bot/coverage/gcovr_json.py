"""gcovr's JSON report (``gcovr --json``): a ``files`` list, each with ``lines`` carrying
``line_number``, ``count`` and the ``branches`` of that line (each with its own ``count``).

Lines gcovr marks ``gcovr/noncode`` or ``gcovr/excluded`` are not coverable. A line listed more
than once (one entry per function or template instance in newer format versions) is merged as the
Cobertura reader merges: hits add up, the best branch outcome counts.
"""
from __future__ import annotations

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles


def read_gcovr_json(document: dict, path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="gcovr json", source=path)
    repo = RepoFiles(root)
    name = ""
    try:
        for item in document["files"]:
            name = item["file"]
            entry = report.entry(repo.resolve(name), name)
            for line in item.get("lines", []):
                if line.get("gcovr/noncode") or line.get("gcovr/excluded"):
                    continue
                number = int(line["line_number"])
                entry.add_line(number, max(int(line.get("count", 0)), 0))
                branches = line.get("branches") or []
                if branches:
                    report.has_branches = True
                    entry.add_branch(number, sum(1 for b in branches if int(b.get("count", 0)) > 0),
                                     len(branches))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CoverageInputError(f"{path}: malformed gcovr JSON report ({exc.__class__.__name__} "
                                 f"in file entry {str(name)[:80]!r})") from None
    return report
