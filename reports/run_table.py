"""``perfbot run`` output: a results document as a plain-text or Markdown table."""
from __future__ import annotations

from .escape import md, terminal_text


def _rate(row: dict) -> str:
    return f"{row['rate']:,.2f}" if row.get("rate") is not None else "-"


def _mem(row: dict) -> str:
    value = row.get("peak_mem_bytes")
    return f"{value / 2**20:,.1f}" if value else "-"


def _compile(row: dict) -> str:
    value = row.get("compile_s")
    return f"{value:.2f}" if value is not None else "-"


def _accuracy(row: dict) -> str:
    acc = row.get("accuracy") or {}
    status = acc.get("status", "-")
    if status == "FAILED" and acc.get("max_abs_err") is not None:
        return f"FAILED (max abs {acc['max_abs_err']:.3g} in {acc.get('worst_output')})"
    return status


def _status(row: dict) -> str:
    return "ok" if row["status"] == "ok" else f"error: {row.get('error') or ''}"


COLUMNS = ("Test", "Batch", "Mode", "Rate (inf/s)", "Compile s", "Peak MiB", "Accuracy", "Status")


def table_rows(doc: dict) -> list[tuple[str, ...]]:
    # Names come from the manifest and errors quote model files (node names): no control
    # characters may reach the terminal.
    return [tuple(terminal_text(cell) for cell in (
                r["name"], str(r["batch"]), r["mode"], _rate(r), _compile(r), _mem(r),
                _accuracy(r), _status(r)))
            for r in doc["rows"]]


def headline(doc: dict) -> str:
    run = doc["run"]
    rows = doc["rows"]
    errors = sum(r["status"] == "error" for r in rows)
    failed = sum((r.get("accuracy") or {}).get("status") == "FAILED" for r in rows)
    shard = f", shard {run['shard']}" if run.get("shard") else ""
    return (f"run {run['id']} · commit {run['commit'][:12]} · target {run['target']}{shard} · "
            f"{len(rows)} rows, {errors} errors, {failed} accuracy failures")


def render_text(doc: dict) -> str:
    body = [COLUMNS, *table_rows(doc)]
    # The status column (free text) is last so it needs no padding.
    widths = [max(len(r[i]) for r in body) for i in range(len(COLUMNS) - 1)]
    lines = []
    for r in body:
        cells = [c.ljust(w) if i in (0, 2, 6) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells + [r[-1]]))
    return headline(doc) + "\n\n" + "\n".join(lines) + "\n"


# Error messages are the one long cell; a whole one fits easily (a suite is a few dozen rows).
MAX_CELL = 2000


def _md_cell(text: str) -> str:
    # Names and error messages are untrusted text: keep the table intact and inert (no broken
    # rows, no HTML, no @-mentions or issue links), the same escaping as the PR comments.
    return md(text, MAX_CELL)


def render_markdown(doc: dict) -> str:
    lines = [f"**{_md_cell(headline(doc))}**", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" if i in (0, 2, 6, 7) else "---:" for i in range(len(COLUMNS))) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in table_rows(doc)]
    return "\n".join(lines) + "\n"
