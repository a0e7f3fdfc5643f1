"""Merging shard runs into one run."""
from __future__ import annotations

import pytest

from bot.store import StoreError, open_store


@pytest.fixture
def store(db_url):
    with open_store(db_url) as opened:
        yield opened


def _shard(store, row_factory, shard, names, *, commit="abc1234", ended="2026-11-01T11:00:00Z",
           started="2026-11-01T10:00:00Z", indexed=True, label="{}/2"):
    run_id = store.create_run({"id": f"s{shard}", "commit": commit, "target": "cpu",
                               "branch": "main", "suite": "smoke",
                               "shard": label.format(shard) if label else None,
                               "started": started, "machine": {"hostname": "h"}})
    for name, index in names:
        extra = {"index": index} if indexed else {}
        store.add_row(run_id, row_factory(name, seed=index, **extra))
    if ended:
        store.finish_run(run_id, ended)
    return run_id


def test_merge_restores_suite_order_and_hides_shards(store, row_factory):
    a = _shard(store, row_factory, 1, [("m0", 0), ("m2", 2)], started="2026-11-01T10:05:00Z")
    b = _shard(store, row_factory, 2, [("m1", 1), ("m3", 3)], ended="2026-11-01T12:00:00Z")
    merged = store.merge_runs([a, b])
    doc = store.get_run(merged)
    assert [r["name"] for r in doc["rows"]] == ["m0", "m1", "m2", "m3"]
    run = doc["run"]
    assert (run["commit"], run["shard"], run["suite"]) == ("abc1234", None, "smoke")
    assert run["started"] == "2026-11-01T10:00:00Z" and run["ended"] == "2026-11-01T12:00:00Z"
    assert [r["id"] for r in store.find_runs()] == [merged]
    assert store.latest_run("main")["id"] == merged
    assert len(store.history("m0", 1, "fp32")) == 1  # not counted twice
    assert store.get_run(a)["rows"]  # the shards are kept
    with pytest.raises(StoreError, match="already merged"):
        store.merge_runs([a])


def test_merge_without_index_keeps_run_order_and_accepts_overrides(store, row_factory):
    # Not shards of one layout (and no suite index): the runs' rows follow one another.
    a = _shard(store, row_factory, 1, [("x", 0)], indexed=False, label=None)
    b = _shard(store, row_factory, 2, [("y", 1)], indexed=False, ended=None, label=None)
    merged = store.merge_runs([b, a], {"id": "combined", "suite": "default"})
    doc = store.get_run("combined")
    assert merged == "combined"
    assert [r["name"] for r in doc["rows"]] == ["y", "x"]
    assert doc["run"]["ended"] is None and doc["run"]["suite"] == "default"


def test_merge_refuses_mixed_commits_duplicates_and_unknown_runs(store, row_factory):
    a = _shard(store, row_factory, 1, [("x", 0)])
    b = _shard(store, row_factory, 2, [("x", 0)])
    with pytest.raises(StoreError, match="both"):
        store.merge_runs([a, b])
    c = store.create_run({"id": "other", "commit": "def5678", "target": "cpu",
                          "started": "2026-11-01T10:00:00Z"})
    with pytest.raises(StoreError, match="different commits"):
        store.merge_runs([a, c])
    with pytest.raises(StoreError, match="no run"):
        store.merge_runs([a, "nope"])
    with pytest.raises(StoreError, match="nothing to merge"):
        store.merge_runs([])
    # A refused merge changed nothing.
    assert {r["id"] for r in store.find_runs()} == {a, b, c}


def test_merge_of_shards_without_index_restores_round_robin_order(store, row_factory):
    # Shard i of N holds suite rows i-1, i-1+N, ...; merged in any order they interleave back.
    a = _shard(store, row_factory, 1, [("m0", 0), ("m2", 2), ("m4", 4)], indexed=False)
    b = _shard(store, row_factory, 2, [("m1", 1), ("m3", 3)], indexed=False)
    merged = store.merge_runs([b, a])
    assert [r["name"] for r in store.get_run(merged)["rows"]] == ["m0", "m1", "m2", "m3", "m4"]
