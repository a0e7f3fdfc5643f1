"""Helpers shared by the report tests (this module holds no tests): fixture loading, and
Markdown rendered to HTML by the CommonMark parser rich already depends on (markdown-it-py), with
tables enabled as on GitHub."""
from __future__ import annotations

import copy
import json
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from tests import paths

FIXTURES = paths.FIXTURES / "reports"


def seed_compare() -> dict:
    return copy.deepcopy(json.loads((FIXTURES / "seed-pr-1875-compare.json").read_text()))


def seed_table() -> list[list[str]]:
    return [line.split("\t") for line in (FIXTURES / "seed-pr-1875-table.tsv").read_text().splitlines()]


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.tags, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def markdown_html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)


def parse_markdown(text: str) -> _Tables:
    """Tables (rows of cell texts) and every HTML tag the Markdown produces."""
    parser = _Tables()
    parser.feed(markdown_html(text))
    return parser
