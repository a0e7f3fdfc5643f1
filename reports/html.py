"""The HTML report: one self-contained file (inline CSS and SVG, nothing fetched) with the
performance table and its plots, the accuracy table and the coverage summary."""
from __future__ import annotations

from markupsafe import Markup

from .coverage_input import CoverageResult

from . import formatting as fmt
from .coverage_box import coverage_box
from .env import html_env
from .views import (ACCURACY_FIELDS, ROW_FIELDS, change_phrase, impacted_view, moved_head,
                    with_defaults)
from .profile_plot import movers_svg
from .plots import diff_summary_svg, trend_svg

History = dict[tuple, list[dict]]


def _history_for(history: History | None, row: dict) -> list[dict] | None:
    if not history:
        return None
    return history.get((row.get("name"), row.get("batch"), row.get("mode") or "fp32"))


def _coverage_context(result: CoverageResult, pr: int | None, pr_head: str | None) -> dict:
    if result.base is not None:
        who = f"#{pr}" if pr is not None else (result.head_name or "head")
        headline = (f"Merging {who} ({fmt.short_sha(result.head_commit, 7)}) into "
                    f"{result.base_name or 'base'} ({fmt.short_sha(result.base_commit, 7)}) will "
                    f"{change_phrase(result.delta)}.")
    else:
        headline = (f"Coverage of {fmt.short_sha(result.head_commit, 7)} is "
                    f"{fmt.coverage_pct(result.head.coverage)}; there is no base report.")
    box_lines = [{"text": line, "cls": "worse" if line.startswith("-") else "better" if line.startswith("+") else ""}
                 for line in coverage_box(result, pr).splitlines()]
    return {
        "headline": headline, "head_commit": result.head_commit,
        "patch": fmt.coverage_pct(result.patch_pct) if result.patch_pct is not None else "n/a",
        "pr_head": moved_head(pr_head, result.head_commit), "box_lines": box_lines,
        "files": [impacted_view(f) for f in result.files], "rules": fmt.COVERAGE_RULES,
    }


def render_html(compare_doc: dict | None = None, coverage_result: CoverageResult | None = None,
                history: History | None = None, pr: int | None = None, pr_head: str | None = None,
                title: str = "perfbot report") -> str:
    """The whole page as a string; ``history`` maps (name, batch, mode) to the base branch's
    recorded rates, oldest first (``[{"commit", "started", "rate"}]``, with ``step_pct`` on a run
    where the rate stepped)."""
    rows, columns, summary = [], {}, None
    if compare_doc is not None:
        head = fmt.short_sha(compare_doc["head"].get("commit"))
        for raw in compare_doc.get("rows", []):
            row = with_defaults(raw, ROW_FIELDS)
            # Our own matplotlib output: trusted markup, unlike everything else on the page.
            row["trend_svg"] = Markup(trend_svg(_history_for(history, row), row["rate_old"],
                                                row["rate_new"], head))
            row["movers_svg"] = Markup(movers_svg(row["profile_diff"])) if row["profile_diff"] else None
            rows.append(row)
        columns = {
            "ci": any(r["ci_low_pct"] is not None for r in rows),
            "compile": any(r["compile_s_new"] is not None or r["compile_s_old"] is not None for r in rows),
            "memory": any(r["peak_mem_new"] is not None or r["peak_mem_old"] is not None for r in rows),
        }
        summary = Markup(diff_summary_svg(rows)) if rows else ""
    accuracy = [with_defaults(item, ACCURACY_FIELDS) for item in (compare_doc or {}).get("accuracy") or []]
    return html_env().get_template("report.html.j2").render(
        title=title, compare=compare_doc, rows=rows, columns=columns, summary_svg=summary,
        accuracy=accuracy,
        stale_head=moved_head(pr_head, compare_doc["head"].get("commit")) if compare_doc else None,
        coverage=_coverage_context(coverage_result, pr, pr_head) if coverage_result else None)


def write_html(path: str, **kwargs) -> str:
    """Render and write the page; returns the path."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_html(**kwargs))
    return path
