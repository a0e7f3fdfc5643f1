"""A coverage report is untrusted data (a fork's CI artifact): the paths it names must never make
a reader open anything outside the checkout, nor a device, FIFO or huge file inside it."""
from __future__ import annotations

import os

import pytest

from bot.coverage import CoverageInputError, read_report
from bot.coverage import safe_files

# A Go block 1.1,3.2 over a file whose line 3 is only "}": with the file read, line 3 is dropped.
SOURCE = "package m\nfunc f() {\n}\n"


def _profile(tmp_path, name: str) -> str:
    profile = tmp_path / "c.out"
    profile.write_text(f"mode: set\n{name}:1.1,3.2 1 1\n")
    return str(profile)


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "f.go").write_text(SOURCE)
    return tmp_path / "repo"


def test_a_path_climbing_out_of_the_checkout_is_not_read(tmp_path, checkout):
    report = read_report(_profile(tmp_path, "../secret/f.go"), root=str(checkout))
    (entry,) = report.files.values()
    assert set(entry.lines) == {1, 2, 3}  # the outside file was never looked at


def test_a_symlink_out_of_the_checkout_is_resolved_before_the_check(tmp_path, checkout):
    os.symlink(tmp_path / "secret" / "f.go", checkout / "f.go")
    report = read_report(_profile(tmp_path, "f.go"), root=str(checkout))
    assert set(report.files["f.go"].lines) == {1, 2, 3}


def test_a_file_inside_the_checkout_is_still_read(tmp_path, checkout):
    (checkout / "f.go").write_text(SOURCE)
    report = read_report(_profile(tmp_path, "f.go"), root=str(checkout))
    assert set(report.files["f.go"].lines) == {1, 2}


@pytest.mark.timeout(30)
def test_dev_zero_named_by_a_go_profile_is_not_opened(tmp_path, checkout):
    # Before, the reader read /dev/zero until memory ran out.
    climb = "../" * (len(checkout.parts) + 2)
    report = read_report(_profile(tmp_path, f"{climb}dev/zero"), root=str(checkout))
    (entry,) = report.files.values()
    assert set(entry.lines) == {1, 2, 3}


@pytest.mark.timeout(30)
def test_a_fifo_inside_the_checkout_is_not_opened(tmp_path, checkout):
    os.mkfifo(checkout / "f.go")  # opening it for reading would wait for a writer forever
    report = read_report(_profile(tmp_path, "f.go"), root=str(checkout))
    assert set(report.files["f.go"].lines) == {1, 2, 3}


def test_a_source_file_over_the_size_cap_is_treated_as_absent(tmp_path, checkout, monkeypatch):
    (checkout / "f.go").write_text(SOURCE)
    monkeypatch.setattr(safe_files, "MAX_SOURCE_BYTES", 8)
    report = read_report(_profile(tmp_path, "f.go"), root=str(checkout))
    assert set(report.files["f.go"].lines) == {1, 2, 3}


@pytest.mark.timeout(30)
def test_a_report_that_is_not_a_regular_file_is_refused_in_one_line():
    with pytest.raises(CoverageInputError, match="/dev/zero: not a regular file"):
        read_report("/dev/zero")


def test_a_report_over_the_size_cap_is_refused_in_one_line(tmp_path, monkeypatch):
    report = tmp_path / "lcov.info"
    report.write_text("SF:a.c\nDA:1,1\nend_of_record\n")
    monkeypatch.setattr(safe_files, "MAX_REPORT_BYTES", 10)
    with pytest.raises(CoverageInputError, match="more than the"):
        read_report(str(report))

