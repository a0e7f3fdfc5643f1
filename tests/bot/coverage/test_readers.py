"""Coverage readers on gcovr Cobertura and LCOV fixtures (with branches), branch figures from a
real coverage.py --branch run, and clear errors for bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.coverage import (CoverageInputError, compare_coverage, diff_from_file, parse_diff,
                          read_report, totals_of)
from tests.paths import FIXTURES

COVERAGE = FIXTURES / "reports" / "coverage"


@pytest.mark.parametrize("name", ["gcovr.xml", "lcov.info"])
def test_gcovr_and_lcov_read_the_same_project(name, tmp_path):
    # The reports were made in /ci/build/checkout; here the checkout is elsewhere, so paths keep
    # their report spelling relative to the source directory and the diff pairs them by suffix.
    report = read_report(str(COVERAGE / name), root=str(tmp_path))
    assert report.has_branches
    pm = next(f for p, f in report.files.items() if p.endswith("src/pass_manager.cpp"))
    # The LCOV file names the function's first line (FN:9, FNDA:4) with no DA:9 of its own: that
    # line counts, with the function's hits, as diff-cover's LCOV reader counts it.
    extra = {9: 4} if name == "lcov.info" else {}
    assert pm.lines == {**extra, 10: 4, 11: 4, 12: 2, 13: 0, 14: 4, 15: 0, 16: 1}
    assert pm.branches[11] == (1, 2) and pm.branches[14] == (2, 2) and pm.branches[15] == (0, 2)
    totals = totals_of(report)
    # Codecov's split: line 11 ran with a branch untaken -> partial; 13, 15, hpp:5 -> misses.
    assert (totals.files, totals.lines, totals.hits, totals.misses, totals.partials, totals.branches) == \
        (2, 10 + len(extra), 6 + len(extra), 3, 1, 6)
    assert totals.coverage == pytest.approx(100 * (6 + len(extra)) / (10 + len(extra)))

    diff = parse_diff(
        "diff --git a/src/pass_manager.cpp b/src/pass_manager.cpp\n"
        "--- a/src/pass_manager.cpp\n+++ b/src/pass_manager.cpp\n"
        "@@ -10,0 +11,2 @@\n+a\n+b\n@@ -14,0 +16,1 @@\n+c\n"
        "diff --git a/docs/notes.md b/docs/notes.md\n--- a/docs/notes.md\n+++ b/docs/notes.md\n"
        "@@ -1,0 +2 @@\n+note\n")
    assert diff == {"src/pass_manager.cpp": {11, 12, 16}, "docs/notes.md": {2}}
    from bot.coverage import ChangedLines
    result = compare_coverage(report, None, ChangedLines(added=diff))
    # Lines 11, 12 and 16 are coverable and ran; the Markdown file is not measured.
    assert (result.patch_lines, result.patch_hits) == (3, 3)
    assert [f.path for f in result.files] == [next(p for p in report.files if p.endswith("pass_manager.cpp"))]


def test_source_roots_make_paths_repository_relative(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pass_manager.cpp").write_text("")
    text = (COVERAGE / "gcovr.xml").read_text().replace("/ci/build/checkout", str(tmp_path))
    (tmp_path / "cov.xml").write_text(text)
    report = read_report(str(tmp_path / "cov.xml"), root=str(tmp_path))
    assert sorted(report.files) == ["src/include/replace_allocate.hpp", "src/pass_manager.cpp"]


def test_branch_figures_match_coverage_py(tmp_path):
    (tmp_path / "mod.py").write_text(
        "def f(x):\n    if x > 0:\n        return 1\n    return 2\n\n"
        "def g(x):\n    for i in range(x):\n        pass\n    return x\n\n"
        "f(1)\ng(0)\ng(2)\n")
    env = {**os.environ, "COVERAGE_FILE": str(tmp_path / ".coverage")}
    run = [sys.executable, "-m", "coverage"]
    subprocess.run([*run, "run", "--branch", "mod.py"], cwd=tmp_path, check=True, env=env, capture_output=True)
    for kind, name in (("xml", "c.xml"), ("json", "c.json"), ("lcov", "c.info")):
        subprocess.run([*run, kind, "-o", name], cwd=tmp_path, check=True, env=env, capture_output=True)
    truth = json.loads((tmp_path / "c.json").read_text())["totals"]
    figures = [totals_of(read_report(str(tmp_path / n), root=str(tmp_path))) for n in ("c.xml", "c.json", "c.info")]
    for totals in figures:
        assert totals.has_branches
        assert totals.lines == truth["num_statements"]
        assert totals.misses == truth["missing_lines"]
        assert totals.branches == truth["num_branches"]
        assert totals.partials == truth["num_partial_branches"]
    assert figures[0] == figures[1] == figures[2]
    assert figures[0].partials == 1  # `if x > 0` never took its false side


@pytest.mark.parametrize("content, message", [
    ("<coverage><unclosed></coverage>", "not a readable Cobertura XML"),
    ("<report/>", "not Cobertura"),
    ('{"meta": {}}', "not a coverage.py JSON report"),
    ("SF:a.c\nDA:x,1\nend_of_record\n", "malformed LCOV record"),
    ("hello", "not Cobertura XML, Clover XML, JaCoCo XML, LCOV, coverage.py JSON, gcovr JSON, llvm-cov JSON"),
    ("mode: set\nexample.com/m/a.go 1 1\n", "malformed Go coverage profile line"),
    ('<report><group name="g"/></report>', "XML root is <report>, not Cobertura's"),
    ('{"/abs/a.js": {"path": "/abs/a.js", "statementMap": {}}}', "coverage-final.json"),
    ("[1, 2]", "not Cobertura XML"),
    # An XML report that does not parse is named by its own format, as its malformed lines are.
    ('<?xml version="1.0"?><!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
     '<report name="x"><package name="a">', "not a readable JaCoCo XML report"),
    ('<?xml version="1.0"?><coverage generated="1" clover="4.4.1"><project timestamp="1">',
     "not a readable Clover XML report"),
    ('<coverage generated="1"><project timestamp="1"><file name="a.php">', "not a readable Clover XML"),
    ('<report name="x"><package name="a"><sourcefile name="A.java"><line nr="x" ci="1"/>'
     '</sourcefile></package></report>', "JaCoCo XML: malformed <line"),
    ('<coverage clover="4"><project><file path="a.js"><line num="x" count="1"/></file></project>'
     '</coverage>', "Clover XML: malformed <line"),
])
def test_bad_reports_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "report"
    path.write_text(content)
    with pytest.raises(CoverageInputError, match=message) as caught:
        read_report(str(path))
    assert "\n" not in str(caught.value)


def test_entity_expansion_is_refused():
    with pytest.raises(CoverageInputError, match="not a readable Cobertura XML"):
        read_report(str(COVERAGE / "bomb.xml"))


def test_missing_inputs(tmp_path):
    with pytest.raises(CoverageInputError, match="not found"):
        read_report(str(tmp_path / "nope.xml"))
    with pytest.raises(CoverageInputError, match="is a folder"):
        read_report(str(tmp_path))
    with pytest.raises(CoverageInputError, match="diff not found"):
        diff_from_file(str(tmp_path / "nope.diff"))
    from bot.coverage import diff_from_git
    with pytest.raises(CoverageInputError, match="git"):
        diff_from_git("main...HEAD", repo=str(tmp_path))


def test_lcov_record_variants(tmp_path):
    """Records other writers use: gcov's BA (Bazel), a BRDA branch named in free text with a comma,
    lcov 2's FN with an end line and its FNL/FNA (skipped), no newline after the last record."""
    (tmp_path / "a.info").write_text(
        "TN:\nSF:a.c\nFN:1,4,f\nFNDA:3,f\nFNL:0,1,4\nFNA:0,3,f\nDA:2,3\nBA:2,2\nBA:2,1\n"
        "DA:3,0\nBA:3,0\nBA:3,0\nBRDA:4,0,jump to line 5, or exit,1\nBRDA:4,0,jump to line 6,0\n"
        "DA:4,3\nend_of_record\nSF:a.c\nDA:2,1\nBA:2,1\nBA:2,2\nend_of_record")
    entry = read_report(str(tmp_path / "a.info"), root=str(tmp_path)).files["a.c"]
    assert entry.lines == {1: 3, 2: 4, 3: 0, 4: 3}  # line 1 from FN/FNDA, as diff-cover counts it
    # Line 2's two outcomes were each taken in one of the two sections: both covered.
    assert entry.branches == {2: (2, 2), 3: (0, 2), 4: (1, 2)}


def test_cobertura_branch_attribute_in_any_case(tmp_path):
    # coverlet (.NET) writes branch="True".
    (tmp_path / "c.xml").write_text(
        '<coverage><packages><package><classes><class filename="a.cs"><lines>'
        '<line number="3" hits="2" branch="True" condition-coverage="50% (1/2)"/>'
        '</lines></class></classes></package></packages></coverage>')
    report = read_report(str(tmp_path / "c.xml"), root=str(tmp_path))
    assert report.has_branches and report.files["a.cs"].branches == {3: (1, 2)}
