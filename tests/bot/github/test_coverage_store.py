"""`perfbot coverage store|load`: ci.yml keeps each default-branch commit's coverage report in the
results store; perf-comment.yml loads the PR base's report back from there."""
from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.store import open_store
from tests.paths import FIXTURES

COMMIT = "9f" * 20
XML = """<?xml version="1.0" ?>
<coverage version="7.4" line-rate="0.5" branch-rate="0" lines-covered="1" lines-valid="2">
  <sources><source>.</source></sources>
  <packages><package name="p" line-rate="0.5"><classes>
    <class name="a.py" filename="p/a.py" line-rate="0.5"><methods/>
      <lines><line number="1" hits="1"/><line number="2" hits="0"/></lines></class>
  </classes></package></packages>
</coverage>
"""


@pytest.fixture
def files(tmp_path):
    report = tmp_path / "coverage.xml"
    report.write_text(XML, encoding="utf-8")
    return tmp_path, report


def test_store_then_load_by_prefix_round_trips_the_bytes(db_url, files, capsys):
    tmp, report = files
    assert main(["coverage", "store", "--commit", COMMIT, "--branch", "main", "--db", db_url,
                 "--format", "json", str(report)]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["format"] == "cobertura" and stored["commit"] == COMMIT
    out = tmp / "base" / "coverage.xml"
    assert main(["coverage", "load", "--commit", COMMIT[:10], "--db", db_url, "--out", str(out)]) == 0
    assert out.read_bytes() == report.read_bytes()


@pytest.mark.parametrize("name,fmt", [("go/count.out", "go-coverprofile"), ("java/jacoco.xml", "jacoco"),
                                      ("llvm/llvm-cov.json", "llvm-cov-json"),
                                      ("js/head/nyc/clover.xml", "clover"), ("js/head/c8/lcov.info", "lcov")])
def test_stored_format_names_what_was_read(db_url, capsys, name, fmt):

    report = FIXTURES / "coverage" / name
    assert main(["coverage", "store", "--commit", COMMIT, "--db", db_url, "--format", "json", str(report)]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == fmt


def test_newest_report_of_a_commit_wins(db_url, files):
    tmp, report = files
    main(["coverage", "store", "--commit", COMMIT, "--db", db_url, str(report)])
    report.write_text(XML.replace('hits="0"', 'hits="3"'), encoding="utf-8")
    main(["coverage", "store", "--commit", COMMIT, "--db", db_url, str(report)])
    out = tmp / "loaded.xml"
    main(["coverage", "load", "--commit", COMMIT, "--db", db_url, "--out", str(out)])
    assert 'hits="3"' in out.read_text()


def test_missing_report_and_bad_input_are_one_line_errors(db_url, files, capsys):
    tmp, report = files
    open_store(db_url).close()   # a database without that commit's report
    assert main(["coverage", "load", "--commit", COMMIT, "--db", db_url, "--out", str(tmp / "x")]) == 2
    assert "no coverage report of commit 9f9f9f9f9f9f" in capsys.readouterr().err
    assert not (tmp / "x").exists()
    garbage = tmp / "garbage.txt"
    garbage.write_text("not a coverage report", encoding="utf-8")
    assert main(["coverage", "store", "--commit", COMMIT, "--db", db_url, str(garbage)]) == 2
    assert main(["coverage", "store", "--commit", "main", "--db", db_url, str(report)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not Cobertura XML" in err[0] and "--commit must be a commit SHA" in err[1]
