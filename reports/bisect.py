"""``perfbot bisect`` output: the first bad commit with its Diff and p, then every step taken, as
plain text, Markdown or JSON. Commit subjects and row names are data: escaped for Markdown, and
stripped of control characters for a terminal."""
from __future__ import annotations

from .escape import md, terminal_text
from .formats import render_as

HEADLINES = {
    "found": "first bad commit",
    "ambiguous": "first bad commit (or one of the skipped commits before it)",
    "not-reproduced": "the bad commit is not significantly slower than the good one: nothing to bisect",
    "bad-fails": "the row fails on the bad commit, so there is no slowdown to look for",
}


def pct(value) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def p_text(value) -> str:
    return "—" if value is None else f"{value:.2g}"


def _step_cells(step: dict, escape, commit=lambda sha: sha) -> list[str]:
    note = "re-measured" if step["remeasured"] else ""
    return [str(step["number"]), commit(step["commit"][:12]), escape(step["subject"]),
            f"{step['position']}", pct(step["diff_pct"]), p_text(step["p_value"]), step["verdict"],
            f"{step['rounds']}", note]


HEADER = ["Step", "Commit", "Subject", "Place", "Diff", "p", "Verdict", "Rounds", "Note"]


def render_text(doc: dict) -> str:
    lines = [f"bisect of {terminal_text(doc['row'])} from good {doc['good'][:12]} to bad "
             f"{doc['bad'][:12]} ({doc['candidates']} commits, {len(doc['steps'])} A/B steps)"]
    lines.append(_headline(doc, terminal_text))
    for suspect in doc["suspects"]:
        lines.append(f"  could also be {suspect[:12]}")
    table = [HEADER] + [_step_cells(s, lambda t: terminal_text(t)[:50]) for s in doc["steps"]]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    lines.append("")
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join(lines) + "\n"


def render_markdown(doc: dict) -> str:
    lines = [f"### perfbot bisect: {md(doc['row'])}", "",
             f"From good `{doc['good'][:12]}` to bad `{doc['bad'][:12]}`: {doc['candidates']} "
             f"commits, {len(doc['steps'])} A/B steps against the good commit.", "",
             _headline(doc, md, lambda sha: f"`{sha}`"), ""]
    for suspect in doc["suspects"]:
        lines.append(f"- could also be `{suspect[:12]}`")
    lines += ["| " + " | ".join(HEADER) + " |", "|---:|---|---|---:|---:|---:|:---:|---:|---|"]
    lines += ["| " + " | ".join(_step_cells(s, md, lambda sha: f"`{sha}`")) + " |" for s in doc["steps"]]
    return "\n".join(lines) + "\n"


def _headline(doc: dict, escape, commit=lambda sha: sha) -> str:
    first = doc["first_bad"]
    if first is None:
        return HEADLINES[doc["status"]]
    return (f"{HEADLINES[doc['status']]}: {commit(first['commit'][:12])} {escape(first['subject'])} "
            f"(Diff {pct(first['diff_pct'])}, p {p_text(first['p_value'])})")


def render(doc: dict, fmt: str) -> str:
    return render_as(doc, fmt, render_text, render_markdown)
