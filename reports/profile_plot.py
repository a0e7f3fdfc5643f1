"""The HTML report's chart of a flagged row's profile diff: old and new µs a run of its top
movers, side by side (node names come from the model: clipped, never parsed as math)."""
from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure

from .escape import clip
from .plots import MARK_COLOURS, RC, _svg


def movers_svg(diff: dict) -> str:
    movers = diff.get("movers") or []
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.0, max(1.4, 0.3 * len(movers) + 0.7)), layout="constrained")
        ax = fig.add_subplot()
        positions = list(range(len(movers)))
        old = [m.get("old_us") or 0.0 for m in movers]
        new = [m.get("new_us") or 0.0 for m in movers]
        ax.barh([p - 0.2 for p in positions], old, height=0.4, color="#9e9e9e", label="base")
        ax.barh([p + 0.2 for p in positions], new, height=0.4, color=MARK_COLOURS["regression"],
                label="head")
        labels = [clip(f"{m.get('name', '?')} ({m.get('op', '?')})", 48) for m in movers]
        ax.set_yticks(positions, labels, parse_math=False, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("µs a run")
        ax.legend(loc="lower right", fontsize=7)
        return _svg(fig)
