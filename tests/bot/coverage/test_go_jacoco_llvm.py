"""Go coverage profiles, JaCoCo XML and llvm-cov JSON, read from reports made by the real tools
(go 1.19, JaCoCo 0.8.6, clang 14; see tests/fixtures/coverage/README.md), through the figures and
the ``report`` command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.coverage import (ChangedLines, CoverageInputError, compare_coverage, read_report,
                          totals_of)
from tests import paths

FIXTURES = paths.FIXTURES / "coverage"
GO, JAVA = FIXTURES / "go", FIXTURES / "java"
GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}

# count.out, line by line, read by hand from shapes.go: a block covers its lines from start to
# end, less an end line holding only its "}" (7.20,9.3 ends on line 9's "\t}").
SHAPES_LINES = {6: 1, 7: 1, 8: 0, 10: 1, 14: 1, 15: 1, 16: 1, 17: 1, 18: 0, 19: 0, 20: 0, 21: 0,
                25: 3, 26: 3, 27: 6, 28: 6, 30: 3}
# Lines where two blocks meet: "if w < 0 || h < 0 {" ran, its body did not; the loop header and
# the one-line "if x > 0 { total += x }" ran in both of their blocks.
SHAPES_BRANCHES = {7: (1, 2), 27: (2, 2), 28: (2, 2)}


def test_go_profile_lines_and_partials():
    report = read_report(str(GO / "count.out"), root=str(GO))
    assert report.format == "go coverprofile" and report.has_branches
    # The module path example.com/geometry is go.mod's directory, the checkout root here.
    assert sorted(report.files) == ["main.go", "shapes/shapes.go"]
    shapes = report.files["shapes/shapes.go"]
    assert shapes.lines == SHAPES_LINES and shapes.branches == SHAPES_BRANCHES
    assert report.files["main.go"].lines == {9: 1, 10: 1, 13: 0, 14: 0}
    totals = totals_of(report)
    assert (totals.lines, totals.hits, totals.partials, totals.misses) == (21, 13, 1, 7)


def test_go_profile_listing_blocks_once_per_package_merges_them():
    # -coverpkg=./...: each package's test binary lists every block; main's test ran
    # Classify(4), shapes' test did not, so lines 18-19 ran. In set mode a count is 0 or 1.
    report = read_report(str(GO / "set.out"), root=str(GO))
    shapes = report.files["shapes/shapes.go"]
    assert set(shapes.lines) == set(SHAPES_LINES)
    assert {n for n, hits in shapes.lines.items() if hits == 0} == {8, 20, 21}
    assert set(shapes.lines.values()) == {0, 1}


def test_go_module_in_a_subdirectory_and_files_without_source(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(GO, repo / "go")
    report = read_report(str(GO / "count.out"), root=str(repo))
    assert sorted(report.files) == ["go/main.go", "go/shapes/shapes.go"]
    assert report.files["go/shapes/shapes.go"].lines == SHAPES_LINES
    # Without the checkout's copy of a file no line is known to hold only a "}": all are kept,
    # and the import path stays as written, for the diff to pair by suffix.
    bare = read_report(str(GO / "count.out"), root=str(tmp_path / "elsewhere"))
    shapes = bare.files["example.com/geometry/shapes/shapes.go"]
    assert shapes.lines == {**SHAPES_LINES, 9: 0}
    assert set(bare.files["example.com/geometry/main.go"].lines) == {9, 10, 11, 13, 14, 15}


def test_go_profile_made_outside_a_module_names_files_by_absolute_path(tmp_path):
    shutil.copy(GO / "main.go", tmp_path / "main.go")
    profile = tmp_path / "c.out"
    profile.write_text(f"mode: set\n_{tmp_path}/main.go:9.29,11.2 1 1\n_{tmp_path}/main.go:13.13,15.2 1 0\n")
    report = read_report(str(profile), root=str(tmp_path))
    assert report.files["main.go"].lines == {9: 1, 10: 1, 13: 0, 14: 0}


def test_go_figures_match_codecovs_published_example(tmp_path):
    """A profile published with the figure Codecov showed for it (37.5 %, where go test says
    50 % of statements): lines 5-19 of a main.go whose blocks end on lines holding only "}"."""
    source = ["package main", "", 'import "fmt"', "",
              "func check(a int, b int, verbose bool) bool {",
              "\tif verbose {", '\t\tfmt.Println("checking")', "\t}", "",
              "\tif a > b {", '\t\tfmt.Println("a")', "\t}", "",
              "\treturn a > b", "", "", "func main() {", "\tcheck(2, 1, false)", "}"]
    (tmp_path / "main.go").write_text("\n".join(source) + "\n")
    (tmp_path / "go.mod").write_text("module github.com/sbougerel/codecov-go-example\n")
    profile = tmp_path / "coverage.txt"
    profile.write_text("mode: atomic\n"
                       "github.com/sbougerel/codecov-go-example/main.go:5.44,6.8 1 1\n"
                       "github.com/sbougerel/codecov-go-example/main.go:10.2,10.8 1 1\n"
                       "github.com/sbougerel/codecov-go-example/main.go:14.2,14.13 1 0\n"
                       "github.com/sbougerel/codecov-go-example/main.go:6.8,8.3 1 0\n"
                       "github.com/sbougerel/codecov-go-example/main.go:10.8,12.3 1 1\n"
                       "github.com/sbougerel/codecov-go-example/main.go:17.13,19.2 1 0\n")
    totals = totals_of(read_report(str(profile), root=str(tmp_path)))
    assert (totals.lines, totals.hits, totals.partials, totals.misses) == (8, 3, 1, 4)
    assert totals.coverage == 37.5


def test_jacoco_lines_branches_and_paths():
    report = read_report(str(JAVA / "jacoco.xml"), root=str(JAVA))
    assert report.format == "jacoco" and report.has_branches
    main, shapes = "src/main/java/com/example/app/Main.java", "src/main/java/com/example/geo/Shapes.java"
    assert sorted(report.files) == [main, shapes]
    assert report.files[main].lines == {5: 0, 7: 1, 8: 1, 9: 1, 10: 0, 12: 1}
    assert report.files[main].branches == {9: (1, 2)}
    # "if (w < 0 || h < 0)" took 2 of its 4 outcomes; the switch 1 of 3; Counter.add never ran.
    assert report.files[shapes].branches == {8: (2, 4), 15: (1, 3), 29: (0, 2)}
    totals = totals_of(report)
    # JaCoCo's own LINE counter says 8 of 16 covered, counting partly covered lines as covered;
    # Codecov's split makes those three partials.
    assert (totals.lines, totals.hits, totals.partials, totals.misses, totals.branches) == (16, 5, 3, 8, 11)


def test_jacoco_aggregate_groups_pick_the_module_folder(tmp_path):
    """Two modules with the same package: only the <group> name tells whose file it is."""
    for module in ("app", "tools"):
        shutil.copytree(JAVA / "src", tmp_path / module / "src")
    text = (JAVA / "jacoco.xml").read_text()
    head, sep, rest = text.partition("<package ")
    body, close, tail = rest.rpartition("</package>")
    packages = sep + body + close
    (tmp_path / "agg.xml").write_text(f'{head}<group name="tools">{packages}</group>{tail}')
    report = read_report(str(tmp_path / "agg.xml"), root=str(tmp_path))
    assert sorted(report.files) == ["tools/src/main/java/com/example/app/Main.java",
                                    "tools/src/main/java/com/example/geo/Shapes.java"]


def test_jacoco_report_of_nothing_measured_is_empty(tmp_path):
    empty = tmp_path / "j.xml"
    empty.write_text('<report name="x"><sessioninfo id="a" start="1" dump="2"/></report>')
    report = read_report(str(empty))
    assert report.format == "jacoco" and report.files == {} and totals_of(report).coverage is None


def _commit(repo: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env={**os.environ, **GIT_ENV})
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env={**os.environ, **GIT_ENV})


def test_go_pull_request_through_the_report_command(tmp_path, capsys):
    """Base lacks Classify (lines 13-24 of shapes.go); the PR adds it. The base profile is the
    head's without Classify's blocks and with Sum's moved up twelve lines, as go test would
    have written it for the base."""
    from bot.cli import main

    repo = tmp_path / "repo"
    shutil.copytree(GO, repo, ignore=shutil.ignore_patterns("*.out"))
    head_source = (repo / "shapes" / "shapes.go").read_text().splitlines(keepends=True)
    (repo / "shapes" / "shapes.go").write_text("".join(head_source[:12] + head_source[24:]))
    (repo / "main.go").write_text((repo / "main.go").read_text().replace("shapes.Classify(n)", "\"\""))
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    _commit(repo, "base")
    subprocess.run(["git", "checkout", "-q", "-b", "feature"], cwd=repo, check=True)
    shutil.copy(GO / "shapes" / "shapes.go", repo / "shapes" / "shapes.go")
    shutil.copy(GO / "main.go", repo / "main.go")
    _commit(repo, "classify")

    base_profile = ["mode: count\n"]
    for line in (GO / "count.out").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        start = int(rest.split(".")[0])
        if name.endswith("shapes.go") and 14 <= start <= 23:
            continue
        if name.endswith("shapes.go") and start >= 25:
            (sl, sc), (el, ec) = (p.split(".") for p in rest.split(" ")[0].split(","))
            rest = f"{int(sl) - 12}.{sc},{int(el) - 12}.{ec} {' '.join(rest.split(' ')[1:])}"
        base_profile.append(f"{name}:{rest}\n")
    (tmp_path / "base.out").write_text("".join(base_profile))
    assert main(["report", "--coverage-head", str(GO / "count.out"), "--coverage-base",
                 str(tmp_path / "base.out"), "--git", "main...feature", "--repo", str(repo),
                 "--pr", "3", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["coverage"]
    # Added coverable lines 14-21 of shapes.go: 14-17 ran, 18-21 (case 4, default) did not;
    # main.go's changed line 10 ran.
    assert (doc["patch_lines"], doc["patch_hits"]) == (9, 5)
    assert {f["path"] for f in doc["files"]} == {"main.go", "shapes/shapes.go"}


def test_figures_for_a_changed_go_file_pair_with_the_diff():
    report = read_report(str(GO / "count.out"), root=str(GO))
    result = compare_coverage(report, None, ChangedLines(added={"shapes/shapes.go": {7, 8, 9, 12}}))
    # 7 ran (partly), 8 did not, 9 holds only "}", 12 is blank.
    assert (result.patch_lines, result.patch_hits) == (2, 1)


LLVM = FIXTURES / "llvm"


def _lcov_da(path: Path) -> dict[str, dict[int, int]]:
    """The raw DA records of an LCOV file, per SF path as written."""
    found: dict[str, dict[int, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        if line.startswith("SF:"):
            current = found.setdefault(line[3:], {})
        elif line.startswith("DA:"):
            number, count = line[3:].split(",")[:2]
            current[int(number)] = int(count)
    return found


def test_llvm_cov_json_lines_and_branches_equal_its_own_lcov_export():
    # Made in /tmp/llvmfix: the absolute paths are fixed to this checkout's src/ by suffix.
    report = read_report(str(LLVM / "llvm-cov.json"), root=str(LLVM))
    assert report.format == "llvm-cov json" and report.has_branches
    assert sorted(report.files) == ["src/main.c", "src/mathx.h"]
    da = _lcov_da(LLVM / "llvm-cov.info")
    for name in report.files:
        assert report.files[name].lines == da[f"/tmp/llvmfix/{name}"], name
    lcov = read_report(str(LLVM / "llvm-cov.info"), root=str(LLVM))
    for name in report.files:
        assert report.files[name].branches == lcov.files[name].branches, name
    main = report.files["src/main.c"]
    # The macro's branch counts at its use (line 32), as llvm-cov's LCOV export puts it; the
    # "&&" on line 19 is two branches, four outcomes.
    assert main.branches[32] == (1, 2) and main.branches[19] == (4, 4)
    assert main.lines[9] == 0 and main.lines[18] == 5  # "case 4:" never ran; the loop test 5 times


@pytest.mark.parametrize("name,content,message", [
    ("c.out", "mode: set\nexample.com/m/a.go:3.2,4.3 1 1\nexample.com/m/a.go:5.2 1\n",
     r"c\.out:3: malformed Go coverage profile line"),
    ("j.xml", '<report name="x"><package name="a"><sourcefile name="A.java">'
              '<line nr="x" mi="0" ci="1" mb="0" cb="0"/></sourcefile></package></report>',
     r"malformed <line nr='x' ci='1'> in 'a/A.java'"),
    ("c.json", '{"type": "llvm.coverage.json.export", "version": "2.0.1", '
               '"data": [{"files": [{"segments": [[1, 1, 1, true, true, false]]}]}]}',
     r"malformed llvm-cov JSON export \(KeyError"),
])
def test_malformed_reports_are_refused_in_one_line(tmp_path, name, content, message):
    bad = tmp_path / name
    bad.write_text(content)
    with pytest.raises(CoverageInputError, match=message) as caught:
        read_report(str(bad))
    assert "\n" not in str(caught.value)
