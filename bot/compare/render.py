"""Plain renderings of a compare document: a rich table for terminals and a simple Markdown
table (the PR comment's fancier Markdown lives in ``reports.markdown`` when present)."""
from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports.escape import show_bidi, terminal_text

from .results import MARK_SYMBOLS

VERDICT_LINES = {
    "recommended": "This build is recommended to merge ✅",
    "not-recommended": "This build is not recommended to merge 🔴",
}
ACCURACY_SYMBOLS = {"PASSED": "✅", "FAILED": "🔴", "ERROR": "❌", "SKIPPED": "⏭️"}


def test_name(row: dict) -> str:
    """Row label as in the reference table: fp16 rows carry an ``_fp16`` suffix (once: the
    manifest's fp16 rows are usually named that way already)."""
    name = row["name"]
    return name + "_fp16" if row.get("mode") == "fp16" and not name.endswith("_fp16") else name


def _rate(value) -> str:
    return "—" if value is None else f"{value:,.2f}"


def _pct(value) -> str:
    # Signed, as in the PR comment (``+0.03%``, ``-4.71%``), never ``-0.00%``.
    if value is None:
        return "—"
    text = f"{value:+.2f}%"
    return "+0.00%" if text == "-0.00%" else text


def _short(side: dict) -> str:
    return (side.get("commit") or "unknown")[:6]


def render_markdown(doc: dict) -> str:
    head, base = _short(doc["head"]), _short(doc["base"])
    lines = [f"| Test | Batch | Rate new {head} | Rate old {base} | Diff | Compare |",
             "|---|---:|---:|---:|---:|:---:|"]
    for row in doc["rows"]:
        lines.append(f"| {_md(test_name(row))} | {row['batch']} | {_rate(row.get('rate_new'))} | "
                     f"{_rate(row.get('rate_old'))} | {_pct(row.get('diff_pct'))} | "
                     f"{MARK_SYMBOLS[row['mark']]} |")
    lines = [f"> ⚠️ **{_md(w)}**" for w in doc.get("warnings") or []] + ([""] if doc.get("warnings") else []) + lines
    lines += ["", VERDICT_LINES[doc["verdict"]], ""]
    notes = [r for r in doc["rows"] if r["mark"] != "ok" and r.get("reason")]
    for row in notes:
        lines.append(f"- {MARK_SYMBOLS[row['mark']]} {_md(test_name(row))}: {_md(row['reason'])}")
    for acc in doc.get("accuracy", []):
        symbol = ACCURACY_SYMBOLS.get(acc["status"], "")
        detail = ""
        if acc["status"] == "FAILED":
            detail = (f" (max abs err {acc.get('max_abs_err')}, max rel err {acc.get('max_rel_err')},"
                      f" worst output {_md(str(acc.get('worst_output')))})")
        elif acc["status"] == "ERROR":
            detail = f" ({_md(acc.get('error') or '')})"
        lines.append(f"- {symbol} {_md(test_name(acc))}: {acc['status']}{detail}")
    return "\n".join(lines).rstrip() + "\n"


def _md(text: str) -> str:
    # Names and reasons come from result files: keep them from breaking out of the table.
    flat = show_bidi(" ".join(str(text).split()))
    for ch in "\\|`*_<>[]":
        flat = flat.replace(ch, "\\" + ch)
    return flat


def render_text(doc: dict, width: int = 140) -> str:
    table = Table(title=f"head {_short(doc['head'])} vs base {_short(doc['base'])}")
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
                      _rate(row.get("rate_new")), _rate(row.get("rate_old")),
                      _pct(row.get("diff_pct")), p, interval, MARK_SYMBOLS[row["mark"]],
                      Text(terminal_text(row.get("reason") or "")))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    for warning in doc.get("warnings") or []:
        console.print(Text(terminal_text(f"warning: {warning}")))
    console.print(table)
    bad = [a for a in doc.get("accuracy", []) if a["status"] in ("FAILED", "ERROR")]
    for acc in bad:
        console.print(Text(terminal_text(f"{ACCURACY_SYMBOLS[acc['status']]} accuracy {test_name(acc)}: "
                                         f"{acc['status']} {acc.get('error') or ''}".rstrip())))
    console.print(VERDICT_LINES[doc["verdict"]])
    return buffer.getvalue()
