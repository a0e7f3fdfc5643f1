"""The output formats every command offers (``--format text|markdown|json``), chosen in one place."""
from __future__ import annotations

import json
from typing import Callable


def as_json(doc) -> str:
    """A document as the JSON every command prints: indented, non-ASCII kept, newline-ended."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render_as(doc: dict, fmt: str, text: Callable[[dict], str], markdown: Callable[[dict], str]) -> str:
    """``doc`` as JSON, or through its own Markdown or plain-text renderer."""
    if fmt == "json":
        return as_json(doc)
    return markdown(doc) if fmt == "markdown" else text(doc)
