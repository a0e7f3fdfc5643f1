"""aa_summary.py: issue 22's A/A criteria over the parts of a same-commit perfbot ab (recorded
compare rows, no GPU)."""
from __future__ import annotations

import json
import sys

import pytest

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import aa_summary  # noqa: E402


def _row(name, batch, diff, mark="ok", **extra):
    return {"name": name, "batch": batch, "mode": "fp32", "diff_pct": diff, "p_value": 0.3, "mark": mark,
            "compile_mark": "ok", "peak_mem_mark": "ok", **extra}


PART1 = {"rows": [_row("a", 64, 0.1), _row("b", 8, -0.2), _row("c", 1, 1.5)]}
PART2 = {"rows": [_row("d", 1, -0.05), _row("u", 2, 0.4)]}


def test_criteria_met_when_every_row_is_within_its_band():
    c = aa_summary.check(aa_summary.rows_of([PART1, PART2]))
    assert c["rows"] == 5 and c["median_abs_diff_pct"] == pytest.approx(0.2)
    assert c["median_met"] and c["batch_ge_8_met"] and c["batch_1_met"] and c["none_flagged"]
    assert c["max_abs_diff_batch_ge_8_pct"] == pytest.approx(0.2)
    assert c["max_abs_diff_batch_1_pct"] == pytest.approx(1.5)      # batch 2 (u) is in neither class


@pytest.mark.parametrize("row, failed", [
    (_row("b", 8, -1.2), "batch_ge_8_met"),
    (_row("c", 1, 2.5), "batch_1_met"),
    (_row("a", 64, -3.5, mark="regression"), "none_flagged"),
    (_row("a", 64, 0.0, compile_mark="regression"), "none_flagged"),
    (_row("a", 64, None, mark="error"), "none_flagged")])
def test_each_criterion_can_fail(row, failed):
    c = aa_summary.check(aa_summary.rows_of([PART1, {"rows": [row]}]))   # the later part's row counts
    assert c[failed] is False


def test_median_over_the_rows(capsys, tmp_path):
    wide = {"rows": [_row(n, 64, 0.5) for n in "abc"]}
    assert not aa_summary.check(aa_summary.rows_of([wide]))["median_met"]
    good, empty = tmp_path / "1.json", tmp_path / "2.json"
    good.write_text(json.dumps(PART1))
    empty.write_text("")                                  # a part whose A/B failed
    assert aa_summary.main([str(good), str(empty)]) == 0
    out = capsys.readouterr()
    assert "skipped" in out.err and "3 rows. Median |Diff| +0.20 %" in out.out and "flagged or failed: none" in out.out
