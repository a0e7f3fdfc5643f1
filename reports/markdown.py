"""The three PR comments (performance, accuracy, coverage) as GitHub Markdown.

Each body starts with a hidden marker (``<!-- perfbot:performance -->`` ...) by which the poster
finds and updates its own comment, and stays within GitHub's comment size limit by leaving whole
rows out and saying how many.
"""
from __future__ import annotations

from collections import Counter

from .coverage_input import CoverageResult

from . import formatting as fmt
from .coverage_box import coverage_box
from .env import markdown_env
from .escape import Trusted, code_span, html_inline, md
from .fit import COMMENT_LIMIT, drop_order, fit
from .views import (ACCURACY_FIELDS, ROW_FIELDS, change_phrase, impacted_view, moved_head,
                    notable, resource_moved, with_defaults)

MARKERS = {
    "performance": "<!-- perfbot:performance -->",
    "accuracy": "<!-- perfbot:accuracy -->",
    "coverage": "<!-- perfbot:coverage -->",
}
MAX_IMPACTED_FILES = 20
MAX_ERROR_TEXT = 2000


def _summary(counter: Counter, marks: dict[str, str]) -> Trusted:
    return Trusted(", ".join(f"{n} {marks.get(key, md(key))}" for key, n in counter.items()))


def render_performance(compare_doc: dict, stale_head: str | None = None,
                       limit: int = COMMENT_LIMIT) -> str:
    """The rate-diff table (suite order), notes on flagged rows and the verdict line."""
    rows = [with_defaults(row, ROW_FIELDS) for row in compare_doc.get("rows", [])]
    head, base = compare_doc["head"].get("commit"), compare_doc["base"].get("commit")
    template = markdown_env().get_template("performance.md.j2")

    def render(kept: list[int], omitted: int) -> str:
        shown = [rows[i] for i in kept]
        gone = Counter(rows[i].get("mark") for i in set(range(len(rows))) - set(kept))
        return template.render(
            rows=shown, notes=[r for r in shown if notable(r)],
            resources=any(resource_moved(r) for r in rows),
            warnings=compare_doc.get("warnings") or [],
            detectable=any(r.get("detectable_pct") is not None for r in rows),
            head_commit=head, base_commit=base, verdict=compare_doc.get("verdict"),
            stale_head=moved_head(stale_head, head), omitted=omitted,
            omitted_summary=_summary(gone, fmt.PERF_MARKS))

    order = drop_order(rows, lambda r: r.get("mark") != "ok" or resource_moved(r))
    return fit(render, len(rows), order, limit)


def _index_text(index) -> Trusted:
    if not index:
        return Trusted(fmt.MISSING)
    try:
        return Trusted("(" + ", ".join(str(int(i)) for i in index) + ")")
    except (TypeError, ValueError):
        return md(index)


def _accuracy_items(items: list[dict]) -> list[dict]:
    """Add a label (name, plus batch/mode where one name appears more than once)."""
    items = [with_defaults(item, ACCURACY_FIELDS) for item in items]
    names = Counter(item.get("name") for item in items)
    out = []
    for item in items:
        label = str(item.get("name", "?"))
        if names[item.get("name")] > 1:
            extra = ", ".join(str(x) for x in (f"batch {item['batch']}" if item["batch"] is not None else None,
                                                item.get("mode")) if x)
            label = f"{label} ({extra})" if extra else label
        index = item.get("worst_index")
        out.append({**item, "label": md(label), "summary_label": html_inline(label),
                    "error": md(item["error"], MAX_ERROR_TEXT) if item.get("error") else None,
                    "worst_index_text": _index_text(index)})
    return out


def render_accuracy(compare_doc: dict, stale_head: str | None = None,
                    limit: int = COMMENT_LIMIT) -> str:
    """One line per model with its mark; failures carry their numbers in a <details> block."""
    items = _accuracy_items(compare_doc.get("accuracy") or [])
    head = compare_doc["head"].get("commit")
    counts = Counter(item.get("status") for item in items)
    summary = Trusted(", ".join(f"{n} {md(str(s).lower())}" for s, n in counts.items()) or "nothing checked")
    template = markdown_env().get_template("accuracy.md.j2")

    def render(kept: list[int], omitted: int) -> str:
        gone = Counter(items[i].get("status") for i in set(range(len(items))) - set(kept))
        return template.render(items=[items[i] for i in kept], head_commit=head,
                               stale_head=moved_head(stale_head, head), omitted=omitted,
                               omitted_summary=_summary(gone, fmt.ACCURACY_MARKS), summary=summary)

    order = drop_order(items, lambda item: item.get("status") != "PASSED")
    return fit(render, len(items), order, limit)


def comment_bodies(compare_doc: dict | None, coverage_result: CoverageResult | None,
                   pr: int | None = None, pr_head: str | None = None) -> dict[str, str]:
    """One comment body per kind there is data for, each starting with its marker."""
    bodies = {}
    if compare_doc is not None:
        bodies["performance"] = render_performance(compare_doc, stale_head=pr_head)
        bodies["accuracy"] = render_accuracy(compare_doc, stale_head=pr_head)
    if coverage_result is not None:
        bodies["coverage"] = render_coverage(coverage_result, pr=pr, pr_head=pr_head)
    return bodies


def render_coverage(coverage_result: CoverageResult, pr: int | None = None,
                    pr_head: str | None = None, limit: int = COMMENT_LIMIT,
                    max_files: int = MAX_IMPACTED_FILES) -> str:
    """The Codecov-style comment: headline, stale-head warning, the diff box, impacted files."""
    result = coverage_result
    pr = int(pr) if pr is not None else None
    # Files of the diff first, so truncation drops the indirect changes before them.
    files = [impacted_view(f) for f in sorted(result.files, key=lambda f: (not f.in_diff, f.path))]
    template = markdown_env().get_template("coverage.md.j2")

    def render(kept: list[int], omitted: int) -> str:
        return template.render(
            pr=pr, head_name=result.head_name or "head", base_name=result.base_name or "base",
            head_commit=result.head_commit, base_commit=result.base_commit,
            base_present=result.base is not None, head_pct=result.head.coverage,
            change=change_phrase(result.delta),
            patch_text=fmt.coverage_pct(result.patch_pct) if result.patch_pct is not None else "n/a",
            pr_head=moved_head(pr_head, result.head_commit), box=coverage_box(result, pr),
            files=[files[i] for i in kept], omitted=omitted, rules=fmt.COVERAGE_RULES)

    # Past max_files the table says "…and N more" even when the rest would fit.
    extra = max(0, len(files) - max_files)
    files = files[:max_files]
    order = list(reversed(range(len(files))))
    return fit(lambda kept, omitted: render(kept, omitted + extra), len(files), order, limit)
