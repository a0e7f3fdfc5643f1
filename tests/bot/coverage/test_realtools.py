"""Coverage reports made by real tools on real projects, read as other repositories' CI would
hand them to perfbot: gcc/gcov through gcovr (Cobertura, LCOV, JSON) and lcov (with and without
branches), coverage.py in a src/ layout run from different directories, and captured c8/nyc
output. Patch figures are checked against diff-cover on the same inputs; project figures against
the tools' own summaries and across formats.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from defusedxml import ElementTree as ET

from bot.coverage import compare_coverage, diff_from_git, read_report, totals_of
from bot.coverage.gitdiff import parse_diff
from tests.paths import FIXTURES

JS_FIXTURES = FIXTURES / "coverage" / "js"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
}
HAVE_GCC = shutil.which("gcc") is not None and shutil.which("gcov") is not None
HAVE_GCOVR = importlib.util.find_spec("gcovr") is not None
GCOVR = [sys.executable, "-m", "gcovr"]
HAVE_LCOV = shutil.which("lcov") is not None
needs_gcc = pytest.mark.skipif(not HAVE_GCC, reason="gcc/gcov not installed")


def _lcov_branch_setting() -> str:
    """lcov 2 renamed the setting that turns branch records on."""
    if not HAVE_LCOV:
        return ""
    version = subprocess.run(["lcov", "--version"], capture_output=True, text=True).stdout
    major = version.rsplit("version", 1)[-1].strip().split(".")[0]
    return "branch_coverage=1" if major.isdigit() and int(major) >= 2 else "lcov_branch_coverage=1"


LCOV_BRANCHES = _lcov_branch_setting()


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], check=True,
                          capture_output=True, env={**os.environ, **GIT_ENV}).stdout.decode()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def committed_repo(repo: Path, files: dict[str, str]) -> Path:
    """A new git repository at ``repo`` whose branch main holds ``files`` in one commit."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, **kw)


def diff_cover(repo: Path, report: Path, out: Path) -> dict:
    run(["diff-cover", str(report), "--compare-branch=main", f"--format=json:{out}"], cwd=repo)
    return json.loads(out.read_text())


def assert_equals_diff_cover(ours, theirs) -> None:
    assert ours.patch_lines == theirs["total_num_lines"]
    assert ours.patch_lines - ours.patch_hits == theirs["total_num_violations"]
    # diff-cover lists the files with coverable added lines; a file whose change added only
    # comments is still an impacted file here (shown with a "ø" patch figure).
    in_diff = {f.path: f for f in ours.files if f.in_diff and f.patch_lines}
    assert set(in_diff) == set(theirs["src_stats"])
    for path, stats in theirs["src_stats"].items():
        assert in_diff[path].patch_pct == pytest.approx(stats["percent_covered"]), path
        assert in_diff[path].patch_lines - in_diff[path].patch_hits == len(stats["violation_lines"]), path


# --- C: gcc --coverage, gcovr, lcov ---------------------------------------------------------------

HEADER_V1 = """\
#ifndef MATHX_H
#define MATHX_H
static inline int clamp(int v, int lo, int hi) {
    if (v < lo)
        return lo;
    if (v > hi)
        return hi;
    return v;
}
int scale(int v);
#endif
"""
HEADER_V2 = HEADER_V1.replace("int scale(int v);\n", """\
static inline int sign(int v) {
    if (v > 0)
        return 1;
    if (v < 0)
        return -1;
    return 0;
}
int scale(int v);
int twice(int v);
""")
SCALE = '#include "mathx.h"\nint scale(int v) {\n    return clamp(v * 2, 0, 100);\n}\n'
TWICE = """\
#include "mathx.h"
int twice(int v) {
    int r = v + v;
    if (r > 1000 || r < -1000)
        r = sign(r) * 1000;
    return r;
}

int unused_helper(int v) {
    return v - 1;
}
"""
MAIN_V1 = """\
#include <stdio.h>
#include "mathx.h"
int main(int argc, char **argv) {
    int x = argc > 1 ? 5 : 1;
    printf("%d\\n", scale(x));
    printf("%d\\n", clamp(x, 2, 3));
    return 0;
}
"""
MAIN_V2 = MAIN_V1.replace("    return 0;\n", """\
    printf("%d\\n", twice(x));
    if (argc > 2)
        printf("many\\n");
    return 0;
""")
IDENT = "int ident(int v) {\n    return v;\n}\n"  # never called, never changed
C_BASE = {"include/mathx.h": HEADER_V1, "src/util/scale.c": SCALE, "src/util/ident.c": IDENT,
          "src/main.c": MAIN_V1, "README.md": "demo\n"}
C_HEAD = {"include/mathx.h": HEADER_V2, "src/util/twice.c": TWICE, "src/main.c": MAIN_V2,
          "src/util/scale.c": SCALE + "/* doubles, then clamps */\n", "README.md": "demo\nmore\n"}


def build_and_measure(src: Path, build: Path, out: Path, run_args=("x",)) -> Path:
    """Compile every .c under src/ into ``build`` (which may lie outside the checkout, as CMake
    builds do), run the program once, and write every report the installed tools can make."""
    build.mkdir(parents=True)
    out.mkdir(parents=True)
    objects = []
    for source in sorted(src.glob("src/**/*.c")):
        obj = build / (source.stem + ".o")
        run(["gcc", "--coverage", "-O0", f"-I{src / 'include'}", "-c", str(source), "-o", str(obj)], cwd=build)
        objects.append(str(obj))
    run(["gcc", "--coverage", "-o", "prog", *objects], cwd=build)
    run(["./prog", *run_args], cwd=build)
    if HAVE_GCOVR:
        gcovr = [*GCOVR, "-r", str(src), "--object-directory", str(build), str(build)]
        run([*gcovr, "--xml", str(out / "gcovr.xml"), "--lcov", str(out / "gcovr.info"),
             "--json", str(out / "gcovr.json")], cwd=src)
    if HAVE_LCOV:
        lcov = ["lcov", "-q", "--capture", "--directory", str(build)]
        run([*lcov, "-o", str(out / "lcov.info")], cwd=src)
        run([*lcov, "--rc", LCOV_BRANCHES, "-o", str(out / "lcov-br.info")], cwd=src)
    return out


@pytest.fixture(scope="module")
def c_project(tmp_path_factory):
    """main: C_BASE; feature: C_HEAD (the PR). Reports of both, plus head reports made in a
    clone at a CI-machine path (/home/runner/... style) with an out-of-tree build."""
    if not HAVE_GCC:
        pytest.skip("gcc/gcov not installed")
    top = tmp_path_factory.mktemp("c")
    repo = committed_repo(top / "repo", C_BASE)
    base = build_and_measure(repo, top / "build-base", top / "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, C_HEAD)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    head = build_and_measure(repo, top / "build-head", top / "head")
    elsewhere = top / "ci" / "home" / "runner" / "work" / "demo" / "demo"
    subprocess.run(["git", "clone", "-q", "-b", "feature", str(repo), str(elsewhere)], check=True,
                   capture_output=True)
    ci = build_and_measure(elsewhere, top / "ci" / "build", top / "ci-reports")
    return repo, base, head, ci


C_FORMATS = [pytest.param("gcovr.xml", marks=pytest.mark.skipif(not HAVE_GCOVR, reason="no gcovr")),
             pytest.param("gcovr.info", marks=pytest.mark.skipif(not HAVE_GCOVR, reason="no gcovr")),
             pytest.param("lcov.info", marks=pytest.mark.skipif(not HAVE_LCOV, reason="no lcov")),
             pytest.param("lcov-br.info", marks=pytest.mark.skipif(not HAVE_LCOV, reason="no lcov"))]


@pytest.mark.parametrize("name", C_FORMATS)
def test_c_patch_coverage_equals_diff_cover(c_project, tmp_path, name):
    repo, base, head, _ = c_project
    diff = diff_from_git("main...feature", repo=str(repo))
    ours = compare_coverage(read_report(str(head / name), root=diff.root),
                            read_report(str(base / name), root=diff.root), diff)
    assert_equals_diff_cover(ours, diff_cover(repo, head / name, tmp_path / "dc.json"))
    # The header's new inline function never ran; main.c's new `if` did, its body not.
    assert (ours.patch_lines, ours.patch_hits) == (16, 6)
    assert {f.path: f.patch_lines for f in ours.files if f.in_diff} == \
        {"include/mathx.h": 6, "src/main.c": 3, "src/util/twice.c": 7, "src/util/scale.c": 0}
    # README.md is in the diff, not in the report; ident.c in the report, not in the diff, and
    # its coverage did not move, so it is not an impacted file.
    assert "README.md" in diff.added and "src/util/ident.c" not in diff.added
    assert {f.path for f in ours.files} == {"include/mathx.h", "src/main.c", "src/util/twice.c", "src/util/scale.c"}


@pytest.mark.skipif(not HAVE_LCOV, reason="lcov not installed")
def test_c_report_through_the_cli(c_project, tmp_path, capsys):
    """``perfbot report`` run from a subdirectory on the CI machine's lcov files (which diff-cover
    cannot pair with this checkout): the figures diff-cover gives for the same code measured here,
    and the comment names each file as the repository does."""
    from bot.cli import main

    repo, base, _, ci = c_project
    common = ["report", "--coverage-head", str(ci / "lcov-br.info"), "--coverage-base", str(base / "lcov-br.info"),
              "--git", "main...feature", "--repo", str(repo / "src"), "--pr", "7"]
    cwd = os.getcwd()
    os.chdir(repo / "src" / "util")
    try:
        assert main([*common, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)["coverage"]
        assert main([*common, "--format", "markdown"]) == 0
        comment = capsys.readouterr().out
    finally:
        os.chdir(cwd)
    assert (doc["patch_lines"], doc["patch_hits"]) == (16, 6)
    assert {f["path"] for f in doc["files"]} == {"include/mathx.h", "src/main.c", "src/util/scale.c",
                                                 "src/util/twice.c"}
    assert "|include/mathx.h|" in comment and "The diff coverage is 37.50%." in comment
    assert "home/runner" not in comment


@pytest.mark.skipif(not (HAVE_GCOVR and HAVE_LCOV), reason="gcovr and lcov both needed")
def test_c_formats_agree_and_headers_merge(c_project):
    """gcovr merges the header's two compilation units itself; lcov lists the header once per
    unit. Read either way, a branch taken in one unit and not the other is the same figure."""
    repo, base, head, _ = c_project
    for side in (base, head):
        reference = totals_of(read_report(str(side / "gcovr.xml"), root=str(repo)))
        for name in ("gcovr.info", "gcovr.json", "lcov-br.info"):
            assert totals_of(read_report(str(side / name), root=str(repo))) == reference, name
        no_branches = totals_of(read_report(str(side / "lcov.info"), root=str(repo)))
        assert (no_branches.lines, no_branches.misses) == (reference.lines, reference.misses)
        assert no_branches.hits == reference.hits + reference.partials and no_branches.partials == 0
        summary = ET.parse(str(side / "gcovr.xml")).getroot()
        assert reference.lines == int(summary.get("lines-valid"))
        assert reference.lines - reference.misses == int(summary.get("lines-covered"))
        assert reference.branches == int(summary.get("branches-valid"))
    lcov_sections = (head / "lcov-br.info").read_text().count("include/mathx.h")
    assert lcov_sections == 3  # the header, once per unit that included it


@pytest.mark.skipif(not HAVE_GCOVR, reason="gcovr not installed")
@pytest.mark.parametrize("name", ["gcovr.xml", "gcovr.info", "gcovr.json",
                                  pytest.param("lcov-br.info", marks=pytest.mark.skipif(not HAVE_LCOV, reason="no lcov"))])
def test_reports_made_on_another_machine(c_project, name):
    """Made in a checkout at another path (absolute names of that machine), read here: same
    figures, and every path spelled as the diff spells it."""
    repo, base, head, ci = c_project
    diff = diff_from_git("main...feature", repo=str(repo))
    here = compare_coverage(read_report(str(head / name), root=diff.root),
                            read_report(str(base / name), root=diff.root), diff)
    there = compare_coverage(read_report(str(ci / name), root=diff.root),
                             read_report(str(base / name), root=diff.root), diff)
    assert sorted(read_report(str(ci / name), root=diff.root).files) == \
        ["include/mathx.h", "src/main.c", "src/util/ident.c", "src/util/scale.c", "src/util/twice.c"]
    assert (there.patch_lines, there.patch_hits, there.head) == (here.patch_lines, here.patch_hits, here.head)
    assert [(f.path, f.patch_lines, f.patch_hits) for f in there.files] == \
        [(f.path, f.patch_lines, f.patch_hits) for f in here.files]


@needs_gcc
@pytest.mark.skipif(not (HAVE_GCOVR and HAVE_LCOV), reason="gcovr and lcov both needed")
def test_odd_names_and_huge_line_numbers(tmp_path):
    """A UTF-8 file name (lcov 1.x writes it back as Latin-1 bytes) and a #line far down."""
    repo = committed_repo(tmp_path / "repo", {"src/main.c": "int main(void) { return 0; }\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"src/café.c": "int caf(int x) {\n    if (x > 1)\n        return 2;\n#line 1000000\n"
                               "    return x;\n}\n",
                 "src/main.c": "int caf(int);\nint main(void) {\n    return caf(0);\n}\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    out = build_and_measure(repo, tmp_path / "build", tmp_path / "out", run_args=())
    written = (out / "lcov-br.info").read_bytes()
    # lcov 1.x writes the name back as Latin-1 (not UTF-8); either way it must pair with the diff.
    assert "café".encode("latin-1") in written or "café".encode() in written
    diff = diff_from_git("main...feature", repo=str(repo))
    assert set(diff.added) == {"src/café.c", "src/main.c"}  # not git's "src/caf\303\251.c"
    for name in ("gcovr.xml", "gcovr.info", "lcov-br.info"):
        report = read_report(str(out / name), root=diff.root)
        # lcov keeps the far line; gcovr drops lines past the end of the source file.
        assert report.files["src/café.c"].lines.get(1000000) == (1 if name == "lcov-br.info" else None)
        result = compare_coverage(report, None, diff)
        # café.c lines 1-3 added and coverable (3 never ran); the #line-shifted ones are not in
        # the diff's numbering; main.c lines 2-3.
        assert {f.path: (f.patch_lines, f.patch_hits) for f in result.files} == \
            {"src/café.c": (3, 2), "src/main.c": (2, 2)}, name


@needs_gcc
@pytest.mark.skipif(not (HAVE_GCOVR and HAVE_LCOV), reason="gcovr and lcov both needed")
def test_windows_spelling_and_line_endings_of_real_reports(c_project, tmp_path):
    """The same real reports as a Windows runner would write them: backslashes, CRLF, a BOM, and
    no newline after the last end_of_record."""
    repo, _, head, _ = c_project
    xml = (head / "gcovr.xml").read_text()
    source = xml.split("<source>")[1].split("</source>")[0]
    windows_root = "C:\\a\\demo\\demo"
    xml = xml.replace(source, windows_root).replace('filename="src/', 'filename="src\\').replace(
        'filename="include/', 'filename="include\\').replace("src/util/", "src\\util\\")
    (tmp_path / "win.xml").write_text(xml)
    info = (head / "lcov-br.info").read_text().replace(str(repo) + "/", "C:\\a\\demo\\demo\\")
    info = "\ufeff" + info.replace("/", "\\").replace("\n", "\r\n").rstrip("\r\n")
    (tmp_path / "win.info").write_bytes(info.encode("utf-8"))
    for made, original in (("win.xml", "gcovr.xml"), ("win.info", "lcov-br.info")):
        theirs = read_report(str(tmp_path / made), root=str(repo))
        ours = read_report(str(head / original), root=str(repo))
        assert sorted(theirs.files) == sorted(ours.files), made
        assert totals_of(theirs) == totals_of(ours), made


@pytest.mark.skipif(shutil.which("g++") is None or not HAVE_LCOV, reason="g++ and lcov needed")
def test_system_headers_are_left_out(tmp_path):
    """A raw ``lcov --capture`` of C++ lists libstdc++'s headers; like Codecov, the project
    figure is the repository's files only."""
    write(tmp_path, {"main.cpp": "#include <vector>\nint main() {\n    std::vector<int> v{1, 2, 3};\n"
                                 "    int s = 0;\n    for (int x : v)\n        s += x;\n"
                                 "    return s == 6 ? 0 : 1;\n}\n"})
    run(["g++", "--coverage", "-O0", "main.cpp", "-o", "prog"], cwd=tmp_path)
    run(["./prog"], cwd=tmp_path)
    run(["lcov", "-q", "--capture", "--directory", ".", "-o", "cpp.info"], cwd=tmp_path)
    assert "SF:/usr/include/" in (tmp_path / "cpp.info").read_text()
    report = read_report(str(tmp_path / "cpp.info"), root=str(tmp_path))
    assert sorted(report.files) == ["main.cpp"]
    assert report.dropped and all(p.startswith("/usr/") for p in report.dropped)
    assert totals_of(report).lines == len(report.files["main.cpp"].lines) > 0


@needs_gcc
@pytest.mark.skipif(not HAVE_LCOV, reason="lcov not installed")
def test_concatenated_tracefiles_merge_as_lcov_adds_them(tmp_path):
    """Two runs captured separately (two TN: names, the header in several sections each): reading
    the files pasted together gives what ``lcov -a`` makes of them, line by line and per branch."""
    write(tmp_path, {**C_BASE, **C_HEAD})
    build = tmp_path / "build"
    build_and_measure(tmp_path, build, tmp_path / "first", run_args=())
    lcov = ["lcov", "-q", "--rc", LCOV_BRANCHES]
    run([*lcov, "--zerocounters", "--directory", str(build)], cwd=tmp_path)
    run(["./prog", "a", "b"], cwd=build)
    run([*lcov, "--capture", "--directory", str(build), "-t", "second", "-o", "second.info"], cwd=tmp_path)
    run([*lcov, "-a", "first/lcov-br.info", "-a", "second.info", "-o", "added.info"], cwd=tmp_path)
    pasted = tmp_path / "pasted.info"
    pasted.write_bytes((tmp_path / "first" / "lcov-br.info").read_bytes() + (tmp_path / "second.info").read_bytes())
    added = read_report(str(tmp_path / "added.info"), root=str(tmp_path))
    together = read_report(str(pasted), root=str(tmp_path))
    assert sorted(together.files) == sorted(added.files)
    for path, entry in added.files.items():
        assert (together.files[path].lines, together.files[path].branches) == (entry.lines, entry.branches), path
    # The second run took main.c's `argc > 2` branch the first did not: both outcomes now covered.
    assert added.files["src/main.c"].branches[8] == (2, 2)


@pytest.mark.skipif(not HAVE_GCOVR, reason="gcovr not installed")
def test_empty_reports_are_empty_not_errors(tmp_path):
    """gcovr with nothing measured writes a <coverage> with no classes and a bare TN: record; c8
    writes a zero-byte lcov.info. Each is a report of no files ("n/a"), not a crash."""
    run([*GCOVR, "-r", ".", "--xml", "e.xml", "--lcov", "e.info", "--json", "e.json"], cwd=tmp_path)
    (tmp_path / "c8.info").write_bytes(b"")
    for name in ("e.xml", "e.info", "e.json", "c8.info"):
        report = read_report(str(tmp_path / name), root=str(tmp_path))
        assert report.files == {}, name
        result = compare_coverage(report, report, None)
        assert result.head.coverage is None and result.patch_pct is None


def test_huge_hunk_numbers_parse():
    added = parse_diff("diff --git a/big.c b/big.c\n--- a/big.c\n+++ b/big.c\n"
                       "@@ -4000000000,0 +4000000001,2 @@\n+a\n+b\n")
    assert added == {"big.c": {4000000001, 4000000002}}


# --- Python: coverage.py in a src/ layout ---------------------------------------------------------

CORE_V1 = "def clamp(v, lo, hi):\n    if v < lo:\n        return lo\n    if v > hi:\n        return hi\n" \
          "    return v\n\n\ndef unused():\n    return 0\n"
CORE_V2 = CORE_V1.replace("def unused():\n    return 0\n",
                          "def sign(v):\n    if v > 0:\n        return 1\n    if v < 0:\n        return -1\n"
                          "    return 0\n\n\ndef unused():\n    x = 0\n    return x\n")
EXTRA = 'def maybe(flag):\n    if flag:\n        return "yes"\n    return "no"\n'
RUN_V1 = "from mypkg.core import clamp\nprint(clamp(5, 0, 3), clamp(1, 0, 3))\n"
RUN_V2 = ("from mypkg.core import clamp, sign\nfrom mypkg.sub.extra import maybe\n"
          "print(clamp(5, 0, 3), clamp(1, 0, 3), sign(4), maybe(True))\n")
PY_BASE = {"src/mypkg/__init__.py": "", "src/mypkg/core.py": CORE_V1, "src/mypkg/run.py": RUN_V1}
PY_HEAD = {"src/mypkg/core.py": CORE_V2, "src/mypkg/sub/__init__.py": "", "src/mypkg/sub/extra.py": EXTRA,
           "src/mypkg/run.py": RUN_V2}
# (directory coverage runs in, [run] settings): relative_files on and off, branch on and off,
# source pointing at src/ from the root, and a run from inside src/ (paths relative to it).
PY_VARIANTS = {
    "root-relative-branch": (".", "source = src\nrelative_files = true\nbranch = true\n"),
    "root-absolute": (".", "source = src\nrelative_files = false\n"),
    "in-src": ("src", "source = mypkg\nbranch = true\n"),
}


def measure_python(repo: Path, out: Path) -> Path:
    for variant, (where, settings) in PY_VARIANTS.items():
        target = out / variant
        target.mkdir(parents=True)
        rc = target / "rc"
        rc.write_text("[run]\n" + settings)
        env = {**os.environ, "COVERAGE_FILE": str(target / ".coverage"), "PYTHONPATH": str(repo / "src")}
        cov = [sys.executable, "-m", "coverage"]
        run([*cov, "run", f"--rcfile={rc}", "-m", "mypkg.run"], cwd=repo / where, env=env)
        for kind in ("xml", "json", "lcov"):
            run([*cov, kind, f"--rcfile={rc}", "-o", str(target / f"cov.{kind}")], cwd=repo / where, env=env)
    return out


@pytest.fixture(scope="module")
def py_project(tmp_path_factory):
    top = tmp_path_factory.mktemp("py")
    repo = committed_repo(top / "repo", PY_BASE)
    base = measure_python(repo, top / "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, PY_HEAD)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    return repo, base, measure_python(repo, top / "head")


@pytest.mark.parametrize("variant", sorted(PY_VARIANTS))
def test_python_layouts_give_repository_paths_and_diff_cover_figures(py_project, tmp_path, variant):
    repo, base, head = py_project
    diff = diff_from_git("main...feature", repo=str(repo))
    results = []
    for kind in ("xml", "json", "lcov"):
        report = read_report(str(head / variant / f"cov.{kind}"), root=diff.root)
        assert sorted(report.files) == ["src/mypkg/__init__.py", "src/mypkg/core.py", "src/mypkg/run.py",
                                        "src/mypkg/sub/__init__.py", "src/mypkg/sub/extra.py"], kind
        results.append(compare_coverage(report, read_report(str(base / variant / f"cov.{kind}"),
                                                            root=diff.root), diff))
    assert all((r.patch_lines, r.patch_hits, r.head, r.base) ==
               (results[0].patch_lines, results[0].patch_hits, results[0].head, results[0].base)
               for r in results)
    truth = json.loads((head / variant / "cov.json").read_text())["totals"]
    assert results[0].head.lines == truth["num_statements"]
    assert results[0].head.misses == truth["missing_lines"]
    if PY_VARIANTS[variant][0] == ".":  # diff-cover pairs paths relative to where it runs
        for kind in ("xml", "lcov"):
            assert_equals_diff_cover(results[0], diff_cover(repo, head / variant / f"cov.{kind}",
                                                            tmp_path / f"{kind}.json"))


def test_coveragepy_xml_with_two_source_roots(tmp_path):
    """``source = src, tools``: two <source> elements, each file named relative to its own."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    alpha = "def a(x):\n    if x:\n        return 1\n    return 0\n"
    beta = "def b(x):\n    return x * 2\n"
    main = ("import sys\nsys.path[:0] = ['src', 'tools']\nimport alpha, beta\n"
            "print(alpha.a(1), beta.b(2))\n")
    write(repo, {"src/alpha/__init__.py": alpha, "tools/beta/__init__.py": beta, "main.py": main,
                 ".coveragerc": "[run]\nsource = src, tools\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"src/alpha/__init__.py": alpha + "\n\ndef a2():\n    return 2\n",
                 "tools/beta/__init__.py": beta + "\n\ndef b2():\n    return 3\n",
                 "main.py": main + "print(beta.b2())\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    env = {**os.environ, "COVERAGE_FILE": str(tmp_path / ".coverage")}
    run([sys.executable, "-m", "coverage", "run", "main.py"], cwd=repo, env=env)
    run([sys.executable, "-m", "coverage", "xml", "-o", str(tmp_path / "cov.xml")], cwd=repo, env=env)
    assert (tmp_path / "cov.xml").read_text().count("<source>") == 2
    diff = diff_from_git("main...feature", repo=str(repo))
    report = read_report(str(tmp_path / "cov.xml"), root=diff.root)
    assert sorted(report.files) == ["src/alpha/__init__.py", "tools/beta/__init__.py"]
    result = compare_coverage(report, None, diff)
    assert_equals_diff_cover(result, diff_cover(repo, tmp_path / "cov.xml", tmp_path / "dc.json"))
    assert (result.patch_lines, result.patch_hits) == (4, 3)


def test_coveragepy_json_format_1(py_project):
    """coverage.py 5's JSON has no ``meta.format`` and, even with branch measurement, no arcs: its
    lines read as in later formats, without partials (the per-line branch data is not there)."""
    repo = py_project[0]
    path = FIXTURES / "coverage" / "coveragepy-5.5-branch.json"
    document = json.loads(path.read_text())
    assert "format" not in document["meta"] and document["meta"]["branch_coverage"]
    report = read_report(str(path), root=str(repo))
    assert sorted(report.files) == ["src/mypkg/__init__.py", "src/mypkg/core.py", "src/mypkg/run.py",
                                    "src/mypkg/sub/__init__.py", "src/mypkg/sub/extra.py"]
    totals = totals_of(report)
    summaries = [f["summary"] for f in document["files"].values()]
    assert totals.lines == sum(s["num_statements"] for s in summaries)
    assert totals.misses == sum(s["missing_lines"] for s in summaries)
    assert not totals.has_branches and totals.partials == 0


def test_moved_file_keeps_its_base_figure(tmp_path):
    """A file moved and edited: only the edited lines are the patch (as diff-cover counts them),
    and its base figure is the old path's."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
    write(repo, {"src/old_name.py": body, "main.py": "import old_name\nold_name.f0(1)\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    cov = [sys.executable, "-m", "coverage"]
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}

    def measure(name):
        env["COVERAGE_FILE"] = str(tmp_path / f".{name}")
        run([*cov, "run", "--source=src", "main.py"], cwd=repo, env=env)
        run([*cov, "xml", "-o", str(tmp_path / f"{name}.xml")], cwd=repo, env=env)
        return tmp_path / f"{name}.xml"

    base = measure("base")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "mv", "src/old_name.py", "src/new_name.py")
    write(repo, {"src/new_name.py": body + "def added(x):\n    return -x\n",
                 "main.py": "import new_name\nnew_name.f0(1)\nnew_name.added(2)\n"})
    git(repo, "add", "-A", ".")
    git(repo, "commit", "-q", "-m", "move")
    head = measure("head")
    diff = diff_from_git("main...feature", repo=str(repo))
    assert diff.renamed == {"src/new_name.py": "src/old_name.py"}
    result = compare_coverage(read_report(str(head), root=diff.root), read_report(str(base), root=diff.root), diff)
    assert_equals_diff_cover(result, diff_cover(repo, head, tmp_path / "dc.json"))
    moved = next(f for f in result.files if f.path == "src/new_name.py")
    assert (moved.patch_lines, moved.patch_hits) == (2, 2)
    assert moved.base_pct == pytest.approx(100 * 7 / 12)  # six defs + f0's body of twelve lines


# --- JavaScript: captured c8 and nyc output --------------------------------------------------------

@pytest.fixture(scope="module")
def js_project(tmp_path_factory):
    repo = tmp_path_factory.mktemp("js") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for side, branch in (("base", None), ("head", "feature")):
        if branch:
            git(repo, "checkout", "-q", "-b", branch)
            shutil.rmtree(repo / "src")
        shutil.copytree(JS_FIXTURES / side / "src", repo / "src")
        shutil.copy(JS_FIXTURES / side / "package.json", repo / "package.json")
        git(repo, "add", "-A", ".")
        git(repo, "commit", "-q", "-m", side)
    return repo


@pytest.mark.parametrize("tool", ["c8", "nyc"])
@pytest.mark.parametrize("name", ["lcov.info", "cobertura-coverage.xml", "clover.xml"])
def test_javascript_reports_equal_diff_cover(js_project, tmp_path, tool, name):
    repo = js_project
    head, base = JS_FIXTURES / "head" / tool / name, JS_FIXTURES / "base" / tool / name
    diff = diff_from_git("main...feature", repo=str(repo))
    ours = compare_coverage(read_report(str(head), root=diff.root), read_report(str(base), root=diff.root), diff)
    assert_equals_diff_cover(ours, diff_cover(repo, head, tmp_path / "dc.json"))
    assert sorted(f.path for f in ours.files) == ["src/extra.js", "src/index.js", "src/lib/math.js"]
    assert 0 < ours.patch_pct < 100


def test_nyc_function_lines_count_as_diff_cover_counts_them(js_project):
    """nyc's LCOV names a function's first line only in FN:/FNDA:, its Cobertura not at all: the
    LCOV reading counts that line (as diff-cover does), so the two files differ by those lines."""
    lcov = read_report(str(JS_FIXTURES / "head" / "nyc" / "lcov.info"), root=str(js_project))
    xml = read_report(str(JS_FIXTURES / "head" / "nyc" / "cobertura-coverage.xml"), root=str(js_project))
    math_lcov, math_xml = lcov.files["src/lib/math.js"], xml.files["src/lib/math.js"]
    assert set(math_lcov.lines) - set(math_xml.lines) == {1, 8, 14}  # clamp, sign, unused
    assert (math_lcov.lines[1], math_lcov.lines[14]) == (2, 0)  # FNDA:2,clamp / FNDA:0,unused
