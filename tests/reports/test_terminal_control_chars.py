"""Plain-terminal outputs (`perfbot run` and `perfbot compare --format text`): text from results
files and model files never carries control characters (escape sequences) to the terminal."""
from __future__ import annotations

from bot.compare import CompareConfig, compare_results
from reports.compare_table import render_text as compare_text
from reports.run_table import render_text as run_text
from reports.escape import terminal_text

HOSTILE = "m\x1b[2J\x1b]0;title\x07x\x9b31m\nforged line"


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 and ch != "\n" or 0x7f <= ord(ch) <= 0x9f for ch in text)


def test_terminal_text_replaces_controls_and_keeps_everything_else():
    assert terminal_text("a\x1b[31mb\x9bc\r\nd") == "a [31mb c d"
    long = "y" * 5000
    assert terminal_text(long) == long


def test_compare_text_has_no_control_characters(row_factory, doc_factory):
    base = doc_factory([row_factory(HOSTILE, seed=1), row_factory("b", seed=2)])
    head = doc_factory([row_factory(HOSTILE, seed=3, accuracy="FAILED"),
                        row_factory("b", status="error", error="node 'n\x1b[1m' failed")])
    out = compare_text(compare_results(base, head, CompareConfig()), width=300)
    assert not _has_control(out)
    assert "forged line" in out and "node 'n [1m' failed" in out


def test_run_text_has_no_control_characters(row_factory, doc_factory):
    doc = doc_factory([row_factory(HOSTILE), row_factory("b", status="error",
                                                         error="unsupported operator X\x1b[8m (node 'q')")])
    out = run_text(doc)
    assert not _has_control(out)
    assert len(out.splitlines()) == 2 + 1 + 2  # headline, blank, header, one line per row
    assert "unsupported operator X [8m (node 'q')" in out
