"""A plain table of cells the caller made (``perfbot models``): Markdown or aligned text."""
from __future__ import annotations


def simple_table(headers: list[str], rows: list[list], fmt: str) -> str:
    """Cells as they are, in a Markdown table or aligned columns under a dashed rule."""
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(headers)]
    fmt_row = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt_row(headers), fmt_row(["-" * w for w in widths])] + [fmt_row(r) for r in rows])
