"""``perfbot history`` and ``perfbot drift`` output as text, Markdown or JSON. Row names, commit
ids and error messages come from stored data: escaped for Markdown, stripped of control
characters for a terminal."""
from __future__ import annotations

from .escape import md, terminal_text
from .formats import render_as

ISSUE_TITLE = "perfbot: performance drift on {branch}"


def _label(row: dict) -> str:
    return f"{row['name']} b{row['batch']} {row['mode']}"


def _rate(value) -> str:
    return "—" if value is None else f"{value:,.2f}"


def _when(started) -> str:
    return str(started or "")[:16].replace("T", " ")


def _point_note(point: dict) -> str:
    if point["step_pct"] is not None:
        return f"◆ step {point['step_pct']:+.2f}%"
    if point["status"] != "ok":
        return point["status"] + (f": {point['error']}" if point.get("error") else "")
    return ""


def history_text(doc: dict) -> str:
    lines = []
    for row in doc["rows"]:
        lines.append(f"{terminal_text(_label(row))} on {terminal_text(doc['branch'])} "
                     f"({doc['target']}): {len(row['points'])} runs, "
                     f"{len(row['change_points'])} change point(s)")
        for p in row["points"]:
            lines.append(f"  {terminal_text(_when(p['started'])):16}  {p['commit'][:12]:12}  {_rate(p['rate']):>14}  "
                         f"{terminal_text(_point_note(p))}".rstrip())
        lines.append("")
    return "\n".join(lines) if lines else "no stored runs of that row on the branch\n"


def history_markdown(doc: dict) -> str:
    lines = []
    for row in doc["rows"]:
        lines += [f"### {md(_label(row))} on {md(doc['branch'])} ({md(doc['target'])})", "",
                  f"{len(row['points'])} runs, {len(row['change_points'])} change point(s).", "",
                  "| Run started | Commit | Rate (inf/s) | Change |", "|---|---|---:|---|"]
        for p in row["points"]:
            note = md(_point_note(p)) if p["step_pct"] is None else f"**{_point_note(p)}**"
            lines.append(f"| {md(_when(p['started']))} | `{p['commit'][:12]}` | {_rate(p['rate'])} | {note} |")
        lines.append("")
    return "\n".join(lines) if lines else "No stored runs of that row on the branch.\n"


def drift_text(doc: dict) -> str:
    lines = [f"drift on {terminal_text(doc['branch'])} ({doc['target']}): {doc['runs']} runs, "
             f"newest {str(doc['newest_commit'] or '—')[:12]}"]
    if doc["stale_days"] is not None:
        lines.append(f"no run for {doc['stale_days']:g} days")
    for c in doc["change_points"]:
        lines.append(f"change point: {terminal_text(_label(c))} at {c['commit'][:12]} "
                     f"({c['runs_ago']} runs ago): {_rate(c['before'])} → {_rate(c['after'])} "
                     f"({c['step_pct']:+.2f}%)")
    for m in doc["missing"]:
        lines.append(f"missing: {terminal_text(_label(m))} not measured in the newest {m['runs']} "
                     f"run(s) ({m['status']}{': ' + terminal_text(m['error']) if m['error'] else ''}); "
                     f"last at {str(m['last_commit'])[:12]}")
    if len(lines) == 1:
        lines.append(f"no change points in the newest {doc['recent']} runs and no missing rows")
    return "\n".join(lines) + "\n"


def drift_markdown(doc: dict) -> str:
    """The drift issue's body (without its marker line)."""
    lines = [f"Stored runs of **{md(doc['branch'])}** on {md(doc['target'])}: {doc['runs']}, the "
             f"newest of commit `{str(doc['newest_commit'] or '—')[:12]}` "
             f"({md(_when(doc['newest_started']))} UTC).", ""]
    if doc["stale_days"] is not None:
        lines += [f"> :warning: No run for {doc['stale_days']:g} days: the baseline has stalled.", ""]
    if doc["change_points"]:
        lines += [f"#### Change points in the newest {doc['recent']} runs", "",
                  "| Row | Batch | Mode | First run at the new level | Before | After | Step |",
                  "|---|---:|---|---|---:|---:|---:|"]
        lines += [f"| {md(c['name'])} | {c['batch']} | {md(c['mode'])} | `{c['commit'][:12]}` "
                  f"({c['runs_ago']} runs ago) | {_rate(c['before'])} | {_rate(c['after'])} | "
                  f"{'🔴' if c['step_pct'] < 0 else '🔆'} {c['step_pct']:+.2f}% |"
                  for c in doc["change_points"]]
        lines.append("")
    if doc["missing"]:
        lines += ["#### Rows whose data went missing", "",
                  "| Row | Batch | Mode | Newest runs without it | Now | Last measured at |",
                  "|---|---:|---|---:|---|---|"]
        lines += [f"| {md(m['name'])} | {m['batch']} | {md(m['mode'])} | {m['runs']} | "
                  f"{md(m['status'] + (': ' + m['error'] if m['error'] else ''))} | "
                  f"`{str(m['last_commit'])[:12]}` |" for m in doc["missing"]]
        lines.append("")
    if not doc["change_points"] and not doc["missing"] and doc["stale_days"] is None:
        lines += [f"No change points in the newest {doc['recent']} runs and no missing rows.", ""]
    lines.append("`perfbot history ROW --branch BRANCH` shows a row's runs with its change points.")
    return "\n".join(lines) + "\n"


def render_history(doc: dict, fmt: str) -> str:
    """A ``perfbot.history/1`` document (``bot.drift.history.history_doc``)."""
    return render_as(doc, fmt, history_text, history_markdown)


def render_drift(doc: dict, fmt: str) -> str:
    """A drift report as a document (``DriftReport.as_dict``)."""
    return render_as(doc, fmt, drift_text, drift_markdown)
