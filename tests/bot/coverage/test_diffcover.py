"""Patch and project coverage from a real git repository and real coverage.py runs, checked
against diff-cover run on the same inputs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.coverage import compare_coverage, diff_from_git, read_report
from bot.coverage.figures import floor2

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
}

CALC_V1 = '''\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def unused():
    return 0
'''

CALC_V2 = '''\
def add(a, b):
    total = a + b
    return total


def sub(a, b):
    if a < b:
        return b - a
    return a - b


def unused():
    x = 1
    return x
'''

NEW_FILE = '''\
def scale(x, k=2):
    if k == 0:
        raise ValueError("k")
    return x * k


def never():
    return "never"
'''

MAIN_V1 = "from pkg.calc import add, sub\nprint(add(1, 2), sub(3, 1))\n"
MAIN_V2 = ("from pkg.calc import add, sub\nfrom pkg.newmod import scale\n"
           "print(add(1, 2), sub(3, 1), scale(3))\n")


def git(repo, *args):
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
                          check=True, capture_output=True, text=True, env=env).stdout


def write(repo, rel, text):
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def measure(repo, out_dir, branch=False):
    """Run the program under coverage.py and write XML, JSON and LCOV reports."""
    out_dir.mkdir()
    data = str(out_dir / ".coverage")
    run = [sys.executable, "-m", "coverage"]
    env = {**os.environ, "COVERAGE_FILE": data}
    subprocess.run([*run, "run", *(["--branch"] if branch else []), "--source=pkg", "main.py"],
                   cwd=repo, check=True, capture_output=True, env=env)
    for kind, name in (("xml", "coverage.xml"), ("json", "coverage.json"), ("lcov", "coverage.info")):
        subprocess.run([*run, kind, "-o", str(out_dir / name)], cwd=repo, check=True,
                       capture_output=True, env=env)
    return out_dir


@pytest.fixture()
def project(tmp_path):
    """main: commit 1; feature: commit 2 (the PR); main then moves on with an unrelated change."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "pkg/__init__.py", "")
    write(repo, "pkg/calc.py", CALC_V1)
    write(repo, "main.py", MAIN_V1)
    write(repo, "README.md", "demo\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base_reports = measure(repo, tmp_path / "base")

    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "pkg/calc.py", CALC_V2)
    write(repo, "pkg/newmod.py", NEW_FILE)
    write(repo, "main.py", MAIN_V2)
    write(repo, "README.md", "demo\nmore words\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")

    # A later commit on main must not count as the PR's lines (merge-base semantics).
    git(repo, "checkout", "-q", "main")
    write(repo, "pkg/later.py", "def later():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "main moves on")
    git(repo, "checkout", "-q", "feature")
    head_reports = measure(repo, tmp_path / "head")
    return repo, base_reports, head_reports


def run_diff_cover(repo, report, out):
    subprocess.run(["diff-cover", str(report), "--compare-branch=main", f"--format=json:{out}",
                    "--total-percent-float"], cwd=repo, check=True, capture_output=True)
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", ["coverage.xml", "coverage.info"])
def test_patch_coverage_equals_diff_cover(project, tmp_path, name):
    repo, base_reports, head_reports = project
    theirs = run_diff_cover(repo, head_reports / name, tmp_path / "dc.json")

    diff = diff_from_git("main...feature", repo=str(repo))
    assert "pkg/later.py" not in diff.added  # the base branch's own commit is not the PR's
    head = read_report(str(head_reports / name), root=diff.root)
    base = read_report(str(base_reports / name), root=diff.root)
    ours = compare_coverage(head, base, diff)

    assert ours.patch_lines == theirs["total_num_lines"]
    assert ours.patch_lines - ours.patch_hits == theirs["total_num_violations"]
    assert round(ours.patch_pct, 2) == theirs["total_percent_covered"]
    in_diff = {f.path: f for f in ours.files if f.in_diff}
    assert set(in_diff) == set(theirs["src_stats"])
    for path, stats in theirs["src_stats"].items():
        assert in_diff[path].patch_pct == pytest.approx(stats["percent_covered"])
        assert in_diff[path].patch_lines - in_diff[path].patch_hits == len(stats["violation_lines"])
    # The fixture is built so the answer is neither 0 nor 100.
    assert 0 < ours.patch_pct < 100


@pytest.mark.parametrize("name", ["coverage.json", "coverage.info"])
def test_other_formats_give_the_same_figures(project, name):
    repo, base_reports, head_reports = project
    diff = diff_from_git("main...feature", repo=str(repo))
    by_xml = compare_coverage(read_report(str(head_reports / "coverage.xml"), root=diff.root),
                              read_report(str(base_reports / "coverage.xml"), root=diff.root), diff)
    other = compare_coverage(read_report(str(head_reports / name), root=diff.root),
                             read_report(str(base_reports / name), root=diff.root), diff)
    assert (other.patch_lines, other.patch_hits) == (by_xml.patch_lines, by_xml.patch_hits)
    assert other.head == by_xml.head and other.base == by_xml.base
    assert [(f.path, f.head_pct, f.base_pct) for f in other.files] == \
           [(f.path, f.head_pct, f.base_pct) for f in by_xml.files]


def test_project_totals_match_coverage_py(project):
    repo, base_reports, head_reports = project
    diff = diff_from_git("main...feature", repo=str(repo))
    result = compare_coverage(read_report(str(head_reports / "coverage.xml"), root=diff.root),
                              read_report(str(base_reports / "coverage.xml"), root=diff.root), diff)
    for side, reports in (("head", head_reports), ("base", base_reports)):
        summary = json.loads((reports / "coverage.json").read_text())["totals"]
        totals = getattr(result, side)
        assert totals.lines == summary["num_statements"]
        assert totals.misses == summary["missing_lines"]
        assert totals.coverage == pytest.approx(summary["percent_covered"])
    assert result.delta == round(floor2(result.head.coverage) - floor2(result.base.coverage), 2)
    assert result.head_commit == git(repo, "rev-parse", "feature").strip()
