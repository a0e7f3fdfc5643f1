"""Options every command shares, defined once so that they read the same everywhere."""
from __future__ import annotations

FORMATS = ("text", "markdown", "json")


def add_format(parser, help: str = "output format") -> None:
    """``--format text|markdown|json`` (DESIGN: every command that prints a result has it)."""
    parser.add_argument("--format", choices=FORMATS, default="text", help=help)
