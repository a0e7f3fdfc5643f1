"""The ``@@ Coverage Diff @@`` box: base, head and change for each figure, in a ``diff`` code
block so GitHub colours the lines that got worse (``-``) red and those that got better (``+``)
green. Columns widen for long branch names; the default widths are Codecov's."""
from __future__ import annotations

from .coverage_input import CoverageResult, Totals

from .escape import plain
from .formatting import coverage_pct

LABEL, BASE, HEAD, CHANGE, TAIL = 8, 10, 9, 9, 5


def _count_change(new: int, old: int | None) -> str:
    if old is None or new == old:
        return ""
    return f"{new - old:+d}"


def _sign(change: float | None, good_when_up: bool | None) -> str:
    """'+' for better, '-' for worse, ' ' when neutral or unchanged."""
    if not change or good_when_up is None:
        return " "
    return "+" if (change > 0) == good_when_up else "-"


def coverage_box(result: CoverageResult, pr: int | None = None) -> str:
    base, head = result.base, result.head
    base_label = plain(result.base_name or "base", 40)
    head_label = f"#{pr}" if pr is not None else plain(result.head_name or "head", 40)
    base_w = max(BASE, len(base_label) + 3 - LABEL)
    head_w = max(HEAD, len(head_label) + 4)

    def cell(totals: Totals | None, attr: str) -> str:
        if totals is None:
            return "?"
        return coverage_pct(totals.coverage) if attr == "coverage" else str(getattr(totals, attr))

    def line(label: str, attr: str, good_when_up: bool | None) -> str:
        if attr == "coverage":
            delta = result.delta
            change = f"{delta:+.2f}%" if delta else ""
        else:
            old = getattr(base, attr) if base else None
            change = _count_change(getattr(head, attr), old)
            delta = getattr(head, attr) - old if old is not None else None
        sign = _sign(delta, good_when_up)
        return (f"{sign} {label:<{LABEL}}{cell(base, attr):>{base_w}}{cell(head, attr):>{head_w}}"
                f"{change:>{CHANGE}}{'':{TAIL}}")

    width = 2 + LABEL + base_w + head_w + CHANGE + TAIL
    rule = "=" * width
    has_branches = head.has_branches or bool(base and base.has_branches)
    out = [
        "@@" + "Coverage Diff".center(width - 4) + "@@",
        f"##{base_label:>{LABEL + base_w}}{head_label:>{head_w}}{'+/-':>{CHANGE}}{'##':>{TAIL}}",
        rule,
        line("Coverage", "coverage", True),
        rule,
        line("Files", "files", None),
        line("Lines", "lines", None),
    ]
    if has_branches:
        out.append(line("Branches", "branches", None))
    out += [rule, line("Hits", "hits", True), line("Misses", "misses", False)]
    if has_branches:
        out.append(line("Partials", "partials", False))
    return "\n".join(out)

