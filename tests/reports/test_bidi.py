"""Bidirectional control characters in a name (a right-to-left override makes ``exe.gnp`` read
as ``png.exe``) are shown as ``\\uXXXX`` by every renderer, never passed through."""
from __future__ import annotations

import pytest

from bot.coverage.figures import CoverageResult, ImpactedFile, Totals
from reports import compare_table, run_table
from reports.html import render_html
from reports.markdown import render_accuracy, render_coverage, render_performance
from reports.terminal import render_text
from tests.reports.test_helpers import seed_compare

BIDI = "\u202e\u2066\u200f\u061c"
NAME = "model\u202egnp.exe"


def _doc() -> dict:
    doc = seed_compare()
    doc["rows"][0]["name"] = NAME
    doc["accuracy"] = [{"name": NAME, "status": "FAILED", "worst_output": "out\u2066put", "error": "x"}]
    return doc


def _coverage() -> CoverageResult:
    return CoverageResult(head=Totals(1, 10, 5, 5), base=Totals(1, 10, 5, 5),
                          files=[ImpactedFile("src/a\u202eb.py", 50.0, 40.0, 1, 1, True)])


RENDERERS = {
    "markdown performance": lambda: render_performance(_doc()),
    "markdown accuracy": lambda: render_accuracy(_doc()),
    "markdown coverage": lambda: render_coverage(_coverage(), pr=1),
    "terminal": lambda: render_text(_doc(), _coverage(), color=False),
    "html": lambda: render_html(_doc(), _coverage()),
    "compare text": lambda: compare_table.render_text(_doc()),
    "compare markdown": lambda: compare_table.render_compare(_doc(), "markdown"),
    "run markdown": lambda: run_table.render_markdown(_run_doc()),
    "run text": lambda: run_table.render_text(_run_doc()),
}


def _run_doc() -> dict:
    return {"schema": "perfbot.results/1",
            "run": {"id": "r", "commit": "abc1234", "target": "cpu", "started": "2026-01-01T00:00:00Z"},
            "rows": [{"name": NAME, "batch": 1, "mode": "fp32", "status": "error",
                      "error": "bad \u2067 thing", "rate": None, "samples": []}]}


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_bidi_controls_are_shown_not_obeyed(renderer):
    text = RENDERERS[renderer]()
    assert not any(ch in text for ch in BIDI + "\u2067")
    assert "u202e" in text
