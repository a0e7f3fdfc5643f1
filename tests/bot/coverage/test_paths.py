"""How a report's spelling of a file becomes the repository's: the spellings tools and CI
machines write, resolved against a real git checkout."""
from __future__ import annotations

import subprocess

import pytest

from bot.coverage.paths import RepoFiles, match

FILES = ["src/main.c", "src/util/scale.c", "include/mathx.h", "tools/util/scale.c", "lib/core.py"]


@pytest.fixture()
def checkout(tmp_path):
    repo = tmp_path / "repo"
    for rel in FILES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    return repo


@pytest.mark.parametrize("written, sources, expected", [
    ("src/main.c", None, "src/main.c"),
    ("./src/main.c", None, "src/main.c"),
    ("src\\main.c", None, "src/main.c"),
    ("{root}/src/main.c", None, "src/main.c"),
    ("main.c", ["{root}/src"], "src/main.c"),                     # coverage.py-style <source>
    ("util/scale.c", ["/elsewhere/src", "{root}/src"], "src/util/scale.c"),  # the second root names it
    ("/home/runner/_work/demo/demo/src/main.c", None, "src/main.c"),  # another machine's checkout
    ("C:\\a\\demo\\demo\\include\\mathx.h", None, "include/mathx.h"),
    ("file:///builds/demo/lib/core.py", None, "lib/core.py"),
    ("/home/runner/_work/demo/demo/src/util/scale.c", None, "src/util/scale.c"),  # longest tail wins
    ("core.py", None, "lib/core.py"),                               # one name, one file
    ("/usr/include/stdio.h", None, None),                           # a system header: left out
    ("/home/runner/_work/demo/demo/src/gone.c", None, "home/runner/_work/demo/demo/src/gone.c"),  # kept
    ("/opt/x/scale.c", None, "opt/x/scale.c"),                      # two scale.c: no guess
])
def test_spellings_resolve(checkout, written, sources, expected):
    root = str(checkout)
    resolved = RepoFiles(root).resolve(written.replace("{root}", root),
                                       [s.replace("{root}", root) for s in sources or []])
    assert resolved == expected


def test_relative_to_the_directory_the_tool_ran_in(checkout, monkeypatch):
    # c8 in a package directory writes "util/scale.c" for tools/util/scale.c; run from there,
    # the current directory decides between the two scale.c files.
    monkeypatch.chdir(checkout / "tools")
    assert RepoFiles(str(checkout)).resolve("util/scale.c") == "tools/util/scale.c"


def test_without_git_the_directory_is_walked(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    assert RepoFiles(str(tmp_path)).resolve("/ci/checkout/pkg/mod.py") == "pkg/mod.py"


def test_match_pairs_diff_and_report_by_suffix():
    assert match("src/main.c", {"src/main.c", "main.c"}) == "src/main.c"
    assert match("src/main.c", {"ci/src/main.c"}) == "ci/src/main.c"
    assert match("src/main.c", {"a/src/main.c", "b/src/main.c"}) is None


def test_a_report_file_two_changed_files_could_be_is_not_counted_twice():
    from bot.coverage import ChangedLines, compare_coverage
    from bot.coverage.model import CoverageReport

    report = CoverageReport()
    report.file("main.c").lines.update({1: 1, 2: 0})
    both = compare_coverage(report, None, ChangedLines(added={"src/main.c": {1, 2}, "tests/main.c": {1}}))
    assert (both.patch_lines, both.files) == (0, [])
    one = compare_coverage(report, None, ChangedLines(added={"src/main.c": {1, 2}}))
    assert (one.patch_lines, one.patch_hits) == (2, 1)
