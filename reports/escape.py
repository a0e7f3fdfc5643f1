"""Making data-derived text (model, file, branch names, error messages) inert in GitHub Markdown.

A name must not break a table row (``|``, newlines), start a link or code span, open HTML (or a
fake ``<!-- perfbot:... -->`` marker), ping anyone (``@user``, ``@org/team``) or link an issue
(``#123``). GitHub finds mentions in the rendered text, so backslashes do not stop them; a
zero-width space after ``@``/``#`` does.
"""
from __future__ import annotations

import re

MAX_NAME = 200
ZWSP = "&#8203;"

# C0 and C1 controls (ESC and the one-byte CSI start terminal escape sequences), line separators.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# Bidirectional controls (Trojan Source): an override or isolate in a name reorders the text
# around it, so a row or file could read as another. Shown as visible \uXXXX, never obeyed.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BACKSLASHED = re.compile(r"([\\`*\[\]|~$])")
# `_` only emphasises at word edges in GitHub Markdown; keep `slim-mobilenet_1` readable.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_PING = re.compile(r"[@#]")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


class Trusted(str):
    """Text the renderer built itself (numbers, marks, markup); passed through unescaped."""


def show_bidi(text: str) -> str:
    """Bidirectional control characters written out as ``\\uXXXX``."""
    return _BIDI.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def clip(text: str, limit: int = MAX_NAME) -> str:
    text = show_bidi(_CONTROL.sub(" ", str(text)))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal_text(value: object) -> str:
    """Data-derived text for a plain terminal line or table cell: control characters (escape
    sequences, newlines) become spaces so a name cannot recolour, move the cursor or forge
    lines, and bidirectional controls are shown, not obeyed; nothing is cut off."""
    return show_bidi(_CONTROL.sub(" ", str(value)))


def md(value: object, limit: int = MAX_NAME) -> Trusted:
    """Escape one value for inline Markdown (tables, paragraphs, <summary>)."""
    if isinstance(value, Trusted):
        return value
    text = clip(str(value), limit)
    text = "".join(_HTML.get(ch, ch) for ch in text)
    text = _BACKSLASHED.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    text = _PING.sub(lambda m: m.group(0) + ZWSP, text)
    # Autolinks: GitHub links bare URLs and www. names found in text.
    text = text.replace("://", ":" + ZWSP + "//").replace("www.", "www" + ZWSP + ".")
    return Trusted(text)


def html_inline(value: object, limit: int = MAX_NAME) -> Trusted:
    """Escape one value for text inside a raw HTML block (``<summary>``), where GitHub does not
    parse Markdown, so backslash escapes would show; entities and the mention break still work."""
    if isinstance(value, Trusted):
        return value
    text = "".join(_HTML.get(ch, ch) for ch in clip(str(value), limit))
    return Trusted(_PING.sub(lambda m: m.group(0) + ZWSP, text))


def plain(value: object, limit: int = MAX_NAME) -> str:
    """One line of text for fixed-width blocks (code fences), where Markdown is not parsed."""
    return clip(str(value), limit).replace("`", "'")


def code_span(value: object, limit: int = 4 * MAX_NAME) -> Trusted:
    """One value as an inline code span: GitHub parses neither Markdown, HTML nor mentions in
    one, so the text stays as it is, except that the fence is longer than any run of backticks
    inside (which would otherwise close the span early) and controls become spaces."""
    text = clip(str(value), limit)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return Trusted(f"{fence}{pad}{text}{pad}{fence}")
