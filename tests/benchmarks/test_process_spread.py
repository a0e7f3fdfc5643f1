"""process_spread.py on recorded rows (no GPU): each process gives one value, and --pooled takes a
row's processes from several runs (the two sides of an A/A) together."""
from __future__ import annotations

import sys

import pytest

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import process_spread  # noqa: E402


def _row(samples, blocks, e2e=None, name="lstm"):
    return {"name": name, "batch": 1, "mode": "fp32", "status": "ok", "samples": samples, "blocks": blocks,
            "rate": None, "e2e_rate": e2e}


BASE = _row([100.0, 100.2, 103.0, 103.1], [0, 0, 1, 1], e2e=40.0)
HEAD = _row([99.0, 99.2, 101.0], [0, 0, 1], e2e=42.0)


def test_a_run_gives_one_value_a_process():
    out = process_spread.spread(BASE)
    assert out["processes"] == 2
    assert out["range_pct"] == pytest.approx((103.05 - 100.1) / 101.575 * 100)


def test_pooled_rows_keep_every_process_of_every_run_apart():
    (pooled,) = process_spread.pooled_rows([BASE, HEAD])
    assert sorted(pooled["samples"]) == pytest.approx([99.1, 100.1, 101.0, 103.05])
    assert len(set(pooled["blocks"])) == 4      # block 0 of base and block 0 of head are two processes
    assert pooled["rate"] == pytest.approx((100.1 + 101.0) / 2) and pooled["e2e_rate"] == pytest.approx(41.0)
    assert process_spread.spread(pooled)["processes"] == 4


def test_rows_of_other_names_or_batches_are_not_pooled():
    other = {**_row([50.0], [0], name="gru")}
    wider = {**HEAD, "batch": 8}
    assert len(process_spread.pooled_rows([BASE, other, wider])) == 3
