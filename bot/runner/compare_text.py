"""Plain renderings of a comparison document for ``perfbot ab`` (used when the ``reports``
package's renderers are not importable; text output always)."""
from __future__ import annotations

MARKS = {"ok": "✅", "regression": "🔴", "improvement": "🔆", "error": "❌"}


def _num(value, pattern: str) -> str:
    return pattern.format(value) if value is not None else "-"


def _lines(doc: dict) -> list[tuple[str, ...]]:
    out = []
    for row in doc.get("rows", []):
        out.append((str(row.get("name")), str(row.get("batch")), _num(row.get("rate_new"), "{:,.2f}"),
                    _num(row.get("rate_old"), "{:,.2f}"), _num(row.get("diff_pct"), "{:.2f}%"),
                    MARKS.get(row.get("mark"), "?") + (" (re-measured)" if row.get("remeasured") else "")
                    + (f" {row['reason']}" if row.get("reason") and row.get("mark") != "ok" else "")))
    return out


def verdict_line(doc: dict) -> str:
    if doc.get("verdict") == "recommended":
        return "This build is recommended to merge ✅"
    return "This build is not recommended to merge 🔴"


def render_compare_text(doc: dict) -> str:
    head = str(doc.get("head", {}).get("commit", ""))[:6]
    base = str(doc.get("base", {}).get("commit", ""))[:6]
    header = ("Test", "Batch", f"Rate new {head}", f"Rate old {base}", "Diff", "Compare")
    body = [header, *_lines(doc)]
    widths = [max(len(r[i]) for r in body) for i in range(5)]
    text = ["  ".join([c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))] + [r[5]])
            for r in body]
    return "\n".join(text) + "\n\n" + verdict_line(doc) + "\n"


def render_compare_markdown(doc: dict) -> str:
    try:
        from reports.markdown import render_accuracy, render_performance
    except ImportError:
        rows = ["| Test | Batch | Rate new | Rate old | Diff | Compare |", "|---|---:|---:|---:|---:|:---:|"]
        rows += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in _lines(doc)]
        return "\n".join(rows) + "\n\n" + verdict_line(doc) + "\n"
    parts = [render_performance(doc)]
    if doc.get("accuracy"):
        parts.append(render_accuracy(doc))
    return "\n\n".join(parts)
