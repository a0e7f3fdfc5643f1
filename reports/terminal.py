"""The report for people at a terminal: rich tables, coloured by mark.

Data-derived text goes into ``rich.text.Text`` objects, never into markup strings, so a model
named ``[bold red]x`` prints as itself.
"""
from __future__ import annotations

import io

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .coverage_input import CoverageResult

from . import formatting as fmt
from .coverage_box import coverage_box
from .escape import clip

PERF_STYLE = {"ok": "green", "regression": "bold red", "improvement": "yellow", "error": "red"}
ACCURACY_STYLE = {"PASSED": "green", "FAILED": "bold red", "SKIPPED": "dim", "ERROR": "red"}


def _t(value: object, style: str = "") -> Text:
    return Text(clip(str(value)), style=style)


def performance_table(compare_doc: dict) -> Group:
    head = fmt.short_sha(compare_doc["head"].get("commit"))
    base = fmt.short_sha(compare_doc["base"].get("commit"))
    table = Table(title="Performance", title_justify="left")
    for name, justify in (("Test", "left"), ("Batch", "right"), (f"Rate new {head}", "right"),
                          (f"Rate old {base}", "right"), ("Diff", "right"), ("Compare", "center")):
        table.add_column(_t(name), justify=justify)
    for row in compare_doc.get("rows", []):
        style = PERF_STYLE.get(row.get("mark"), "red")
        table.add_row(_t(row.get("name", "?")), _t(row.get("batch", "")),
                      _t(fmt.rate(row.get("rate_new"))), _t(fmt.rate(row.get("rate_old"))),
                      _t(fmt.signed_pct(row.get("diff_pct")), style),
                      _t(fmt.PERF_MARKS.get(row.get("mark"), "❌")))
    recommended = compare_doc.get("verdict") == "recommended"
    verdict = Text("This build is recommended to merge ✅" if recommended
                   else "This build is not recommended to merge 🔴",
                   style="bold green" if recommended else "bold red")
    notes = [Text.assemble(_t(f"{row.get('name')}: ", "bold"), _t(row["reason"]))
             for row in compare_doc.get("rows", []) if row.get("reason")]
    warnings = [_t(f"warning: {w}", "bold yellow") for w in compare_doc.get("warnings") or []]
    return Group(*warnings, table, *notes, verdict)


def accuracy_table(compare_doc: dict) -> Table:
    table = Table(title="Accuracy", title_justify="left")
    for name in ("", "Test", "Status", "rtol", "atol", "max abs err", "max rel err", "worst output"):
        table.add_column(name)
    for item in compare_doc.get("accuracy") or []:
        status = item.get("status")
        table.add_row(_t(fmt.ACCURACY_MARKS.get(status, "❌")), _t(item.get("name", "?")),
                      _t(status, ACCURACY_STYLE.get(status, "red")),
                      _t(fmt.number(item.get("rtol"))), _t(fmt.number(item.get("atol"))),
                      _t(fmt.number(item.get("max_abs_err"))), _t(fmt.number(item.get("max_rel_err"))),
                      _t(item.get("worst_output") or item.get("error") or fmt.MISSING))
    return table


def coverage_panel(result: CoverageResult, pr: int | None = None) -> Group:
    box = Text()
    for line in coverage_box(result, pr).splitlines():
        style = "red" if line.startswith("-") else "green" if line.startswith("+") else ""
        box.append(line + "\n", style=style)
    patch = fmt.coverage_pct(result.patch_pct) if result.patch_pct is not None else "n/a"
    files = Table(title="Impacted files", title_justify="left")
    for name in ("File", "Coverage", "Patch", "Δ"):
        files.add_column(name)
    for item in result.files:
        delta = item.delta
        files.add_row(_t(item.path), _t(fmt.coverage_pct(item.head_pct)),
                      _t(fmt.coverage_pct(item.patch_pct) if item.patch_pct is not None else "ø"),
                      _t(f"{delta:+.2f}%" if delta else "ø",
                         "green" if delta and delta > 0 else "red" if delta else ""))
    return Group(Panel(box, title="Coverage", expand=False), Text(f"Diff coverage: {patch}"), files,
                 Text(fmt.COVERAGE_RULES, style="dim"))


def render_text(compare_doc: dict | None = None, coverage_result: CoverageResult | None = None,
                pr: int | None = None, color: bool = True, width: int = 120) -> str:
    """Everything available, as terminal text (ANSI colours when ``color``)."""
    console = Console(file=io.StringIO(), force_terminal=color, no_color=not color,
                      color_system="standard" if color else None, width=width, highlight=False)
    if compare_doc is not None:
        console.print(performance_table(compare_doc))
        console.print()
        if compare_doc.get("accuracy"):
            console.print(accuracy_table(compare_doc))
            console.print()
    if coverage_result is not None:
        console.print(coverage_panel(coverage_result, pr))
    return console.file.getvalue()
