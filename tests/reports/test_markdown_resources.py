"""Compile-time and peak-memory columns, their notes and the repro line in the performance
comment: a golden file, the columns only when a figure moved, hostile names inert."""
from __future__ import annotations

import re

from reports.escape import code_span
from reports.markdown import render_performance
from tests.reports.test_helpers import FIXTURES, parse_markdown, seed_compare

GOLDEN = FIXTURES / "resources-comment.md"
REPRO = "perfbot ab --base 3f5668 --head 5924fd --suite {} --target gpu"


def _moved() -> dict:
    """The reference thread's rows, the first compiling 40 % slower, the second using 12 % less
    memory, the third with a hostile name and a repro line."""
    doc = seed_compare()
    for row in doc["rows"]:
        row.update(compile_diff_pct=1.0, compile_mark="ok", compile_threshold_pct=25.0,
                   peak_mem_diff_pct=0.0, peak_mem_mark="ok", peak_mem_threshold_pct=10.0)
    doc["rows"][0].update(compile_diff_pct=40.0, compile_mark="regression",
                          repro=REPRO.format(doc["rows"][0]["name"]))
    doc["rows"][1].update(peak_mem_diff_pct=-12.0, peak_mem_mark="improvement",
                          repro=REPRO.format(doc["rows"][1]["name"]))
    doc["rows"][2].update(name="evil`@team|<b>", mark="regression", diff_pct=-9.0,
                          repro=REPRO.format("'evil`@team|<b>'"))
    return doc


def test_the_comment_with_moved_figures_matches_its_golden_file():
    assert render_performance(_moved()) == GOLDEN.read_text(encoding="utf-8")


def test_no_columns_when_no_figure_moved_beyond_its_threshold():
    doc = seed_compare()
    for row in doc["rows"]:
        row.update(compile_diff_pct=20.0, compile_mark="ok", peak_mem_diff_pct=-5.0, peak_mem_mark="ok")
    header = parse_markdown(render_performance(doc)).tables[0][0]
    assert header[-1] == "Compare" and "Compile time" not in render_performance(doc)


def test_columns_and_hostile_names_stay_inert():
    text = render_performance(_moved())
    header, *rows = parse_markdown(text).tables[0]
    assert header[-2:] == ["Compile time", "Peak memory"]
    assert all(len(row) == len(header) for row in rows)   # a name's | split no row
    assert rows[0][-2:] == ["+40.00% 🔴", "+0.00%"] and rows[1][-1] == "-12.00% 🔆"
    assert "<b>" not in text.replace("`", "").split("Reproduce")[0]    # escaped in the note
    html = parse_markdown(text)
    assert not html.tags.count("b")                     # neither the note nor the span opens HTML
    line = next(l for l in text.splitlines() if "evil" in l and "Reproduce" in l)
    assert line.strip().startswith("Reproduce: `` ") and line.endswith(" ``")


def test_a_code_span_fence_outlasts_every_backtick_run():
    span = code_span("a ``` b")
    assert span == "```` a ``` b ````"
    assert code_span("plain") == "`plain`"
    assert re.fullmatch(r"`[^`\n]+`", code_span("x\ny"))
