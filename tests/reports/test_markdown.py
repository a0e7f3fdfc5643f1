"""The PR comments rendered from the reference thread's numbers, and from hostile data."""
from __future__ import annotations

import re

import pytest

from bot.coverage.figures import CoverageResult, ImpactedFile, Totals
from reports.markdown import MARKERS, render_accuracy, render_coverage, render_performance
from tests.reports.test_helpers import parse_markdown, seed_compare, seed_table


def test_performance_table_reproduces_the_reference_thread():
    text = render_performance(seed_compare())
    assert text.startswith(MARKERS["performance"] + "\n")
    tables = parse_markdown(text).tables
    assert len(tables) == 1
    header, *rows = tables[0]
    expected_header, *expected = seed_table()
    assert header == expected_header == ["Test", "Batch", "Rate new 5924fd", "Rate old 3f5668", "Diff", "Compare"]
    assert len(rows) == len(expected) == 27
    for got, want in zip(rows, expected):
        assert got[:4] == want[:4]  # name, batch and both rates exactly as the thread prints them
        # Diff: same number; ours always carries its sign.
        assert float(got[4].rstrip("%")) == pytest.approx(float(want[4].rstrip("%")))
        assert re.fullmatch(r"[+-]\d+\.\d\d%", got[4])
        assert got[5] == want[5]
    assert [r[0] for r in rows if r[5] == "🔴"] == ["agentmodel"]
    assert text.rstrip().endswith("This build is not recommended to merge 🔴")


def test_performance_marks_and_recommended_verdict():
    doc = seed_compare()
    doc["verdict"] = "recommended"
    doc["rows"][0].update(mark="improvement", diff_pct=12.5)
    doc["rows"][1].update(mark="error", rate_new=None, diff_pct=None, reason="GPU out of memory")
    text = render_performance(doc)
    rows = parse_markdown(text).tables[0][1:]
    assert rows[0][4:] == ["+12.50%", "🔆"]
    assert rows[1][2:] == ["—", "5,309.13", "—", "❌"]
    assert "GPU out of memory" in text
    assert text.rstrip().endswith("This build is recommended to merge ✅")


def test_stale_head_warning_only_when_the_pr_moved_on():
    doc = seed_compare()
    assert "❗" not in render_performance(doc, stale_head="5924fd9aaaa")
    warned = render_performance(doc, stale_head="abcdef0123")
    assert "abcdef0" in warned and warned.index("❗") < warned.index("|Test|")
    assert "abcdef0" in render_accuracy(doc, stale_head="abcdef0123")


def test_accuracy_lists_every_model_and_details_failures():
    text = render_accuracy(seed_compare())
    assert text.startswith(MARKERS["accuracy"] + "\n")
    lines = [line for line in text.splitlines() if re.match(r"^(✅|🔴)", line)]
    assert len(lines) == 14
    assert lines[6] == "🔴 cadene-dpn92_1: FAILED: not within tolerance"
    assert all(line.endswith("PASSED: meets tolerance") for i, line in enumerate(lines) if i != 6)
    details = text[text.index("<details>"):text.index("</details>")]
    assert "cadene-dpn92_1" in details
    cells = parse_markdown(text).tables[0][1]
    assert cells == ["0.001", "0.001", "0.0421", "0.0187", "output_0", "(0, 417)", "no"]
    assert text.count("<details>") == 1 and "13 passed, 1 failed" in text


def test_accuracy_error_shows_its_message():
    doc = seed_compare()
    doc["accuracy"] = [{"name": "m", "status": "ERROR", "error": "process crashed (signal 11)"}]
    text = render_accuracy(doc)
    assert "❌ m: ERROR" in text and "process crashed (signal 11)" in text and "<details>" in text


# The reference thread's coverage comment: its box, line for line.
REFERENCE_BOX = """\
@@             Coverage Diff             @@
##           develop    #1875      +/-   ##
===========================================
- Coverage    91.39%   91.37%   -0.02%
===========================================
  Files          419      419
  Lines        15542    15544       +2
===========================================
  Hits         14204    14204
- Misses        1338     1340       +2"""


def reference_coverage() -> CoverageResult:
    return CoverageResult(
        head=Totals(files=419, lines=15544, hits=14204, misses=1340),
        base=Totals(files=419, lines=15542, hits=14204, misses=1338),
        patch_lines=3, patch_hits=3, base_name="develop", base_commit="edc4bf5",
        head_commit="436ea17",
        files=[ImpactedFile("src/include/migraphx/replace_allocate.hpp", 100.0, 100.0, 0, 0, True),
               ImpactedFile("src/pass_manager.cpp", 90.41, 93.06, 1, 1, True),
               ImpactedFile("src/promote_literals.cpp", 100.0, 100.0, 1, 1, True),
               ImpactedFile("src/replace_allocate.cpp", 100.0, 100.0, 1, 1, True)])


def test_coverage_comment_reproduces_the_reference_thread():
    text = render_coverage(reference_coverage(), pr=1875, pr_head="5924fd9")
    assert text.startswith(MARKERS["coverage"] + "\n")
    assert "Merging #1875 (436ea17) into develop (edc4bf5) will decrease coverage by 0.02%." in text
    assert "The diff coverage is 100.00%." in text
    assert "❗ Current head 436ea17 differs from the pull request's latest head 5924fd9" in text
    box = text.split("```diff\n", 1)[1].split("\n```", 1)[0]
    assert [line.rstrip() for line in box.splitlines()] == REFERENCE_BOX.splitlines()
    assert len({len(line) for line in box.splitlines()}) == 1  # a rectangle, as Codecov draws it
    rows = parse_markdown(text).tables[0][1:]
    assert rows == [
        ["src/include/migraphx/replace_allocate.hpp", "100.00% <ø> (ø)", ""],
        ["src/pass_manager.cpp", "90.41% <100.00%> (-2.65%)", "⬇️"],
        ["src/promote_literals.cpp", "100.00% <100.00%> (ø)", ""],
        ["src/replace_allocate.cpp", "100.00% <100.00%> (ø)", ""],
    ]
    assert "Legend" in text
    # the two figures of "90.41% <100.00%>" follow two rules for partial lines: the legend says which
    legend = text[text.index("**Legend:**"):]
    assert "partial, not covered (Codecov's rule)" in legend and "once it ran (diff-cover's rule)" in legend


def test_coverage_without_pr_or_change_and_with_branches():
    result = reference_coverage()
    result.head = Totals(files=2, lines=10, hits=7, misses=2, partials=1, branches=6, has_branches=True)
    result.base = Totals(files=2, lines=10, hits=7, misses=2, partials=1, branches=6, has_branches=True)
    result.patch_lines = result.patch_hits = 0
    result.files = [ImpactedFile(f"f{i}.py", 50.0 + i, 40.0, 2, 1, True) for i in range(30)]
    text = render_coverage(result, pr_head="436ea17cafe")
    assert "will not change coverage" in text and "The diff coverage is n/a." in text
    assert "❗" not in text
    box = text.split("```diff\n", 1)[1].split("\n```", 1)[0]
    assert re.search(r"^  Branches +6 +6 *$", box, re.M) and re.search(r"^  Partials +1 +1 *$", box, re.M)
    assert len(parse_markdown(text).tables[0]) == 1 + 20
    assert "…and 10 more" in text
    assert "⬆️" in text


def test_coverage_increase_marks_lines_green():
    result = reference_coverage()
    result.head, result.base = result.base, result.head
    text = render_coverage(result, pr=7)
    assert "will increase coverage by 0.02%" in text
    assert re.search(r"^\+ Coverage +91\.37% +91\.39% +\+0\.02%", text, re.M)
    assert re.search(r"^\+ Misses +1340 +1338 +-2", text, re.M)


def test_accuracy_names_batch_and_mode_only_when_a_name_repeats():
    doc = seed_compare()
    doc["accuracy"] = [{"name": "resnet50", "status": "PASSED", "batch": 64, "mode": "fp32"},
                       {"name": "resnet50", "status": "PASSED", "batch": 1, "mode": "fp16"},
                       {"name": "unet", "status": "SKIPPED", "batch": 2, "mode": "fp16"}]
    lines = [line for line in render_accuracy(doc).splitlines() if ": " in line and "**" not in line]
    assert lines == ["✅ resnet50 (batch 64, fp32): PASSED: meets tolerance",
                     "✅ resnet50 (batch 1, fp16): PASSED: meets tolerance",
                     "⏭️ unet: SKIPPED: not checked"]


def test_coverage_headline_without_a_pr_names_the_branches():
    result = reference_coverage()
    result.head_name = "feature"
    text = render_coverage(result)
    assert "Merging feature (436ea17) into develop (edc4bf5) will decrease coverage by 0.02%." in text
    box = text.split("```diff\n", 1)[1].split("\n```", 1)[0].splitlines()
    # The head column widened for the longer name; the box stays a rectangle.
    assert box[1] == "##           develop    feature      +/-   ##"
    assert box[3].rstrip() == "- Coverage    91.39%     91.37%   -0.02%"
    assert len({len(line) for line in box}) == 1
