"""The details block of a flagged row: where its time went, names escaped (they come from the
model), the repro line inside it, and the comment still within the size rule."""
from __future__ import annotations

from bot.compare.profile_diff import profile_diff
from reports.markdown import render_performance
from tests.reports.test_helpers import parse_markdown, seed_compare

HOSTILE = "x</summary><img src=y>|@all #1"
OLD = [{"name": "conv1", "op": "fused_conv", "calls": 1, "mean_us": 50.0},
       {"name": HOSTILE, "op": "MatMul", "calls": 1, "mean_us": 20.0}]
NEW = [{"name": "conv1", "op": "Conv", "calls": 1, "mean_us": 45.0},
       {"name": "relu1", "op": "Relu", "calls": 1, "mean_us": 15.0},
       {"name": HOSTILE, "op": "MatMul", "calls": 1, "mean_us": 90.0}]


def _flagged(name=HOSTILE) -> dict:
    doc = seed_compare()
    row = next(r for r in doc["rows"] if r["mark"] == "regression")
    row.update(name=name, profile_diff=profile_diff(OLD, NEW),
               repro="perfbot ab --base 3f5668 --head 5924fd --suite agentmodel --target gpu")
    return doc


def test_the_details_block_lists_the_top_movers_and_the_kernel_changes():
    text = render_performance(_flagged("agentmodel"))
    block = text[text.index("<details>"):text.index("</details>")]
    assert "<summary>🔴 agentmodel: where the time went (70.0 → 150.0 µs a run, 2 → 3 launches)</summary>" in block
    table = parse_markdown(block.split("</summary>", 1)[1]).tables[0]
    assert table[0] == ["Node", "Op", "Old µs", "New µs", "Δ µs"]
    assert table[1][1:] == ["MatMul", "20.0", "90.0", "+70.0"]      # the slowed kernel first
    assert "Appeared in the head: conv1 (Conv), relu1 (Relu)" in block
    assert "Gone from the head: conv1 (fused_conv)" in block
    assert "Reproduce: `perfbot ab --base 3f5668" in block
    assert text.count("Reproduce:") == 1                           # not again in the notes


def test_hostile_names_open_no_html_and_ping_no_one():
    text = render_performance(_flagged())
    html = parse_markdown(text)
    assert "img" not in html.tags
    assert text.count("<details>") == text.count("</details>") == 1
    assert text.count("</summary>") == 1
    assert "@all" not in text and "#1" not in text.replace("#&#8203;1", "")
    assert all(len(row) == 5 for row in parse_markdown(text.split("</summary>", 1)[1]).tables[0])


def test_details_blocks_stay_within_the_comment_limit():
    doc = seed_compare()
    for row in doc["rows"]:
        row.update(mark="regression", diff_pct=-9.0, profile_diff=profile_diff(
            [dict(e, name=f"{row['name']}-{i}-" + "n" * 150) for i, e in enumerate(OLD * 5)], NEW * 5))
    text = render_performance(doc, limit=20000)
    assert len(text) <= 20000 and "more rows not shown here" in text
    assert text.count("<details>") == text.count("</details>") >= 1


def test_the_html_report_charts_the_movers_and_escapes_their_names():
    from reports.html import render_html
    page = render_html(compare_doc=_flagged())
    assert page.count('<details class="profile">') == 1 and "<img" not in page
    assert "x&lt;/summary&gt;&lt;img src=y&gt;" in page
    block = page[page.index('<details class="profile">'):]
    assert "<svg" in block.split("</details>")[0] and "Appeared in the head: conv1 (Conv)" in block
