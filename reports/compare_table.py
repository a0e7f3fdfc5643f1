"""What ``perfbot compare`` (and ``perfbot ab``) print: a compare document as a plain rich table
for terminals, as the PR comments' Markdown, or as JSON."""
from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import formatting as fmt
from .escape import terminal_text
from .formats import as_json
from .markdown import render_accuracy, render_performance
from .views import FLAGS

VERDICT_LINES = {
    "recommended": "This build is recommended to merge ✅",
    "not-recommended": "This build is not recommended to merge 🔴",
}


def test_name(row: dict) -> str:
    """Row label as in the reference table: fp16 rows carry an ``_fp16`` suffix (once: the
    manifest's fp16 rows are usually named that way already)."""
    name = row["name"]
    return name + "_fp16" if row.get("mode") == "fp16" and not name.endswith("_fp16") else name


def resource_lines(rows: list[dict]) -> list[str]:
    """One line per compile time or peak memory that moved beyond its threshold."""
    lines = []
    for row in rows:
        for label, prefix in (("compile time", "compile"), ("peak memory", "peak_mem")):
            if row.get(f"{prefix}_mark") in FLAGS:
                lines.append(f"{fmt.PERF_MARKS[row[prefix + '_mark']]} {label} {test_name(row)}: "
                             f"{fmt.signed_pct(row.get(prefix + '_diff_pct'))} (threshold "
                             f"{fmt.number(row.get(prefix + '_threshold_pct'))}%)")
        if row.get("repro"):
            lines.append(f"  reproduce {test_name(row)}: {row['repro']}")
    return lines


def render_text(doc: dict, width: int = 140) -> str:
    head, base = fmt.short_sha(doc["head"].get("commit")), fmt.short_sha(doc["base"].get("commit"))
    table = Table(title=f"head {head} vs base {base}")
    for column, justify in (("Test", "left"), ("Batch", "right"), ("Rate new", "right"),
                            ("Rate old", "right"), ("Diff", "right"), ("p", "right"),
                            ("Interval", "right"), ("Compare", "center"), ("Reason", "left")):
        table.add_column(column, justify=justify)
    for row in doc["rows"]:
        low, high = row.get("ci_low_pct"), row.get("ci_high_pct")
        interval = "—" if low is None else f"{low:+.1f}..{high:+.1f}%"
        p = "—" if row.get("p_value") is None else f"{row['p_value']:.2g}"
        # Names and reasons come from results files: Text (no markup), no control characters.
        table.add_row(Text(terminal_text(test_name(row))), str(row["batch"]),
                      fmt.rate(row.get("rate_new")), fmt.rate(row.get("rate_old")),
                      fmt.signed_pct(row.get("diff_pct")), p, interval, fmt.PERF_MARKS[row["mark"]],
                      Text(terminal_text(row.get("reason") or "")))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    for warning in doc.get("warnings") or []:
        console.print(Text(terminal_text(f"warning: {warning}")))
    console.print(table)
    for line in resource_lines(doc["rows"]):
        console.print(Text(terminal_text(line)))
    bad = [a for a in doc.get("accuracy", []) if a["status"] in ("FAILED", "ERROR")]
    for acc in bad:
        console.print(Text(terminal_text(f"{fmt.ACCURACY_MARKS[acc['status']]} accuracy {test_name(acc)}: "
                                         f"{acc['status']} {acc.get('error') or ''}".rstrip())))
    console.print(VERDICT_LINES[doc["verdict"]])
    return buffer.getvalue()


def render_compare(doc: dict, fmt_name: str) -> str:
    """The compare document in the format asked for. Markdown has both PR comments, as `perfbot
    report` writes them: the verdict also counts accuracy failures, and a reader must see why a
    build with only ✅ rates is not recommended."""
    if fmt_name == "json":
        return as_json(doc)
    if fmt_name == "markdown":
        return render_performance(doc) + "\n" + render_accuracy(doc)
    return render_text(doc)
