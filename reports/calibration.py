"""``perfbot calibrate`` output: each row's A/A spread, detectable change and verification."""
from __future__ import annotations

from .escape import md, terminal_text
from .formats import as_json


def render_calibration(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return as_json(doc)
    # Row names and errors are data: escaped for Markdown, stripped of controls for a terminal.
    clean = md if fmt == "markdown" else terminal_text
    lines = ["| Row | Batch | Mode | Rate | Spread | Detectable | A/A diff | Verified |",
             "|---|---:|---|---:|---:|---:|---:|---|"]
    for row in doc["rows"]:
        cal = row.get("calibration") or {}
        verify = cal.get("verify") or {}
        checked = ("—" if not verify else "error" if "error" in verify else
                   f"{'caught' if verify['caught'] else 'missed'} ({verify['diff_pct']:+.2f}%, p={verify['p_value']:.2g})")
        figure = lambda v, spec: "—" if v is None else format(v, spec)  # noqa: E731
        lines.append(f"| {clean(row['name'])} | {row['batch']} | {row['mode']} | "
                     f"{figure(row.get('rate'), ',.1f')} | {figure(cal.get('spread_pct'), '.2f')}% | "
                     f"{'±' + figure(row.get('detectable_pct'), '.1f') + '%' if row.get('detectable_pct') is not None else '—'} | "
                     f"{figure(cal.get('aa_diff_pct'), '+.2f')}% | {checked} |"
                     + (f" {clean(row.get('error') or '')}" if row["status"] == "error" else ""))
    return "\n".join(lines) + "\n"
