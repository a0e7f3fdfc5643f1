"""SVG plots for the HTML report, drawn with matplotlib's object API (no pyplot, so no global
backend state) and returned as inline ``<svg>`` text.

Text is kept as SVG text (``svg.fonttype = none``): files stay small, matplotlib XML-escapes it,
and the page's own font draws it. Names never go through mathtext (``parse_math=False``), so a
``$`` in a model name is just a character.
"""
from __future__ import annotations

import io
import re

import matplotlib
from matplotlib.figure import Figure

from .escape import clip

# Rates print as themselves: matplotlib's default offset notation ("+1.089e3" over ticks of 0.7,
# 0.8, ...) would make a reader add numbers in their head.
RC = {"svg.fonttype": "none", "svg.hashsalt": "perfbot", "font.size": 8,
      "axes.spines.top": False, "axes.spines.right": False, "axes.formatter.useoffset": False}
MARK_COLOURS = {"ok": "#2e7d32", "regression": "#c62828", "improvement": "#f9a825", "error": "#616161"}


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    # Inline in HTML: drop the XML prolog and DOCTYPE, keep the <svg> element.
    svg = text[text.index("<svg"):]
    # Ids must be unique within one page; matplotlib derives them from content and the salt.
    return re.sub(r'\s(width|height)="[^"]*pt"', "", svg, count=2)


def trend_svg(history: list[dict] | None, rate_old: float | None, rate_new: float | None,
              head_label: str = "head") -> str:
    """Rate over the base branch's recorded runs (oldest first), the head's rate marked, and the
    runs where the rate stepped (points with a ``step_pct``)."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(3.2, 1.1), layout="constrained")
        ax = fig.add_subplot()
        points = [p for p in history or [] if isinstance(p.get("rate"), (int, float))]
        xs = list(range(len(points)))
        if points:
            ax.plot(xs, [p["rate"] for p in points], color="#1565c0", marker="o", markersize=2.5,
                    linewidth=1, label="base history")
            _mark_steps(ax, points)
        elif rate_old is not None:
            xs = [0]
            ax.plot(xs, [rate_old], color="#1565c0", marker="o", markersize=3, linestyle="none",
                    label="base")
        if rate_old is not None:
            ax.axhline(rate_old, color="#90a4ae", linewidth=0.8, linestyle="--")
        if rate_new is not None:
            ax.plot([len(xs)], [rate_new], color="#c62828", marker="*", markersize=8,
                    linestyle="none", label=clip(head_label, 12))
        ax.set_xticks([])
        ax.set_ylabel("inf/s")
        ax.margins(x=0.08, y=0.25)
        # No legend: it covered the oldest points, and the column header says what is what.
        return _svg(fig)


def _mark_steps(ax, points: list[dict]) -> None:
    """A dotted line before each run where the base branch's rate stepped, with the step's size
    (``step_pct`` of the point that starts the new level, as ``perfbot history`` finds them)."""
    for index, point in enumerate(points):
        step = point.get("step_pct")
        if not isinstance(step, (int, float)):
            continue
        colour = MARK_COLOURS["regression" if step < 0 else "improvement"]
        ax.axvline(index - 0.5, color=colour, linewidth=0.8, linestyle=":")
        ax.annotate(f"{step:+.0f}%", (index - 0.5, 1.0), xycoords=("data", "axes fraction"),
                    fontsize=6, color=colour, ha="center", va="bottom", annotation_clip=False)


def diff_summary_svg(rows: list[dict]) -> str:
    """One horizontal bar of Diff % per row, coloured by its mark, thresholds dashed."""
    with matplotlib.rc_context(RC):
        height = max(1.6, 0.17 * len(rows) + 0.8)
        fig = Figure(figsize=(7.0, height), layout="constrained")
        ax = fig.add_subplot()
        positions = list(range(len(rows)))
        values = [r.get("diff_pct") if isinstance(r.get("diff_pct"), (int, float)) else 0.0 for r in rows]
        colours = [MARK_COLOURS.get(r.get("mark"), MARK_COLOURS["error"]) for r in rows]
        ax.barh(positions, values, color=colours, height=0.7)
        labels = [clip(f"{r.get('name', '?')} ({r.get('batch', '?')})", 48) for r in rows]
        ax.set_yticks(positions, labels, parse_math=False, fontsize=7)
        ax.invert_yaxis()  # suite order top to bottom, as in the table
        ax.axvline(0, color="#424242", linewidth=0.8)
        thresholds = {r.get("threshold_pct") for r in rows if isinstance(r.get("threshold_pct"), (int, float))}
        for threshold in thresholds:
            ax.axvline(-threshold, color="#c62828", linewidth=0.7, linestyle="--")
            ax.axvline(threshold, color="#2e7d32", linewidth=0.7, linestyle="--")
        ax.set_xlabel("Diff % (new vs old rate)")
        return _svg(fig)
