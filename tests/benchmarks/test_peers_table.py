"""peers_table.py: the breadth table from peers.py logs (recorded lines, no GPU): which run each
ratio comes from, later lines replacing earlier ones, the geomeans and the rows below 0.7; and
peers.py's grid of families in parts."""
from __future__ import annotations

import json
import sys

import pytest

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import peers  # noqa: E402
import peers_table  # noqa: E402


def _line(row, ours, compiled, tf32=True, **extra):
    dtype = row.rsplit(":", 1)[-1]
    return json.dumps({"row": row, "dtype": dtype, "ours_rate": ours, "eager_rate": ours / 2,
                       "torch_compile_rate": compiled, "torch_tf32": tf32 if dtype == "fp32" else None, **extra})


LINES = [
    _line("tv:a:64:fp32", 1000.0, 800.0),                  # TF32 default: 1.25
    _line("tv:a:64:fp32", 1100.0, 1000.0, tf32=False),     # exact, its own process: 1.10
    _line("tv:b:64:fp16", 500.0, 1000.0),                  # 0.50: below the floor
    _line("tv:c:1:fp32", 300.0, 100.0),                    # no exact run: no primary ratio
    json.dumps({"row": "tv:d:1:fp16", "error": "RuntimeError: boom"}),
]


def test_fp32_rows_take_the_exact_run_fp16_rows_the_default():
    rows = peers_table.collect(LINES)
    assert rows["tv:a:64:fp32"].primary == pytest.approx(1.10)
    assert rows["tv:a:64:fp32"].tf32_default == pytest.approx(1.25)
    assert rows["tv:b:64:fp16"].primary == pytest.approx(0.5) == rows["tv:b:64:fp16"].tf32_default
    assert rows["tv:c:1:fp32"].primary is None and rows["tv:c:1:fp32"].tf32_default == pytest.approx(3.0)


def test_summary_geomeans_floor_and_errors():
    summary = peers_table.summarise(peers_table.collect(LINES))
    assert summary["primary_rows"] == 2 and summary["primary_geomean"] == pytest.approx((1.10 * 0.5) ** 0.5)
    assert summary["tf32_default_rows"] == 3
    assert summary["tf32_default_geomean"] == pytest.approx((1.25 * 0.5 * 3.0) ** (1 / 3))
    assert summary["below_floor"] == [("tv:b:64:fp16", pytest.approx(0.5))]
    assert summary["errors"] == [("tv:d:1:fp16", "RuntimeError: boom")]


def test_a_later_line_replaces_an_earlier_one_and_clears_an_error():
    rows = peers_table.collect(LINES + [_line("tv:b:64:fp16", 900.0, 1000.0), _line("tv:d:1:fp16", 10.0, 5.0)])
    assert rows["tv:b:64:fp16"].primary == pytest.approx(0.9)
    assert rows["tv:d:1:fp16"].error is None and rows["tv:d:1:fp16"].primary == pytest.approx(2.0)


def test_markdown_has_a_row_each_and_dashes_for_what_was_not_measured():
    text = peers_table.markdown(peers_table.collect(LINES))
    row_c = next(line for line in text.splitlines() if line.startswith("| tv:c:1:fp32 "))
    assert row_c.split("|")[5].strip() == "–" and row_c.split("|")[6].strip() == "–"
    assert "Below 0.7: tv:b:64:fp16 0.50." in text and "- tv:d:1:fp16: RuntimeError: boom" in text


def test_main_reads_logs_in_order(tmp_path, capsys):
    first, second = tmp_path / "1.log", tmp_path / "2.log"
    first.write_text("\n".join(LINES) + "\n")
    second.write_text(_line("tv:b:64:fp16", 2000.0, 1000.0) + "\n")
    assert peers_table.main([str(first), str(second), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["below_floor"] == []


def test_the_grid_in_parts_covers_every_row_once():
    grid = peers.grid_rows()
    assert len(grid) == 4 * len(peers.FAMILIES)
    parts = [peers.grid_part(f"{k}/9") for k in range(1, 10)]
    assert sorted(sum(parts, [])) == sorted(grid)
    assert {row.rsplit(":", 1)[-1] for row in parts[0]} == {"fp32", "fp16"}    # odd N mixes dtypes
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ValueError, match="K/N"):
            peers.grid_part(bad)
    fp32 = [peers.grid_part(f"{k}/2", ("fp32",)) for k in (1, 2)]
    assert sorted(sum(fp32, [])) == sorted(r for r in grid if r.endswith(":fp32"))     # the TF32 column's rows


def test_families_put_each_model_on_one_line_with_its_four_cells():
    lines = LINES + [_line("tv:a:1:fp16", 200.0, 100.0)]
    text = peers_table.families(peers_table.collect(lines))
    row_a = next(line for line in text.splitlines() if line.startswith("| a "))
    # batch 1 fp32 not measured; batch 1 fp16 2.00; large fp32 from the exact run; large fp16 missing
    assert [c.strip() for c in row_a.split("|")[2:7]] == ["64", "–", "2.00", "1.10", "–"]
    assert not any(line.startswith("| d ") for line in text.splitlines())   # its only line failed


def test_ab_sets_our_rates_of_two_trees_side_by_side():
    base = peers_table.collect([_line("tv:a:64:fp16", 100.0, 1.0), _line("tv:b:1:fp16", 50.0, 1.0)])
    head = peers_table.collect([_line("tv:a:64:fp16", 110.0, 1.0, max_abs_vs_torch=0.001),
                                json.dumps({"row": "tv:b:1:fp16", "error": "RuntimeError: boom"}),
                                _line("tv:c:1:fp32", 10.0, 1.0)])
    text = peers_table.ab(base, head)
    row_a = next(line for line in text.splitlines() if line.startswith("| tv:a:64:fp16 "))
    assert [c.strip() for c in row_a.split("|")[2:6]] == ["100", "110", "1.100", "0.001"]
    assert "| tv:b:1:fp16 | 50 | – | – | RuntimeError: boom |" in text   # the head's failure is shown
    assert "Geomean head / base: 1.100 over 1 rows." in text              # c has no base
