"""``perfbot results list``: recorded runs as a Markdown table or a rich table for terminals."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .escape import terminal_text


def run_list_markdown(header: list[str], table: list[list[str]]) -> list[str]:
    """The lines of a Markdown table; a ``|`` in a cell is escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
    return lines


def run_list_table(header: list[str], table: list[list[str]]) -> Table:
    out = Table()
    for i, name in enumerate(header):
        # Run ids are what people copy into export/compare: never shortened, never wrapped;
        # the other columns give way by folding onto more lines (nothing is cut off).
        widest = max([len(name)] + [len(row[i]) for row in table])
        out.add_column(name, no_wrap=(name == "id"), min_width=widest if name == "id" else None,
                       overflow="fold")
    for row in table:
        out.add_row(*(Text(terminal_text(c)) for c in row))
    return out
