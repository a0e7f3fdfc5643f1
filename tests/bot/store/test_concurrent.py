"""Several shard processes writing to one database at the same moment lose nothing."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from bot.store import open_store

WRITER = textwrap.dedent("""
    import sys, time
    from bot.store import open_store
    url, shard, shards, rows, start_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    while time.time() < start_at:   # line the writers up so their transactions overlap
        time.sleep(0.001)
    store = open_store(url)
    run_id = store.create_run({"id": f"shard-{shard}", "commit": "abc1234", "target": "cpu",
                               "branch": "main", "shard": f"{shard}/{shards}",
                               "started": "2026-11-01T10:00:00Z"})
    for i in range(shard, rows * shards, shards):
        store.add_row(run_id, {"name": f"model-{i}", "batch": 1, "mode": "fp32", "status": "ok",
                               "rate": float(i), "samples": [float(i)] * 20, "index": i})
    store.finish_run(run_id)
""")


def _run_writers(script: str, arguments: list[list]) -> None:
    """One process per argument list, all started together; every one must exit 0."""
    start_at = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", script, *map(str, args), str(start_at)],
                              stderr=subprocess.PIPE, text=True) for args in arguments]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), errors


def test_concurrent_shards_then_merge_lose_nothing(db_url):
    shards, rows = 4, 25
    open_store(db_url).close()  # not required, but keeps schema creation out of the race below
    _run_writers(WRITER, [[db_url, i, shards, rows] for i in range(shards)])

    with open_store(db_url) as store:
        for i in range(shards):
            assert store.count_rows(f"shard-{i}") == rows
        merged = store.merge_runs([f"shard-{i}" for i in range(shards)])
        doc = store.get_run(merged)
        assert [r["name"] for r in doc["rows"]] == [f"model-{i}" for i in range(shards * rows)]
        assert all(len(r["samples"]) == 20 for r in doc["rows"])


def test_concurrent_first_open_creates_schema_once(tmp_path, db_url):
    # Fresh database, writers race on creating the tables too.
    _run_writers(WRITER, [[db_url, i, 3, 5] for i in range(3)])
    with open_store(db_url) as store:
        assert sum(store.count_rows(f"shard-{i}") for i in range(3)) == 15


# Writers that all add rows to ONE run, with overlapping keys: the `perfbot run --resume R` of
# several processes at once. Every write must land (an upsert, not a failed insert), every key
# must be one row, and every row must have a position of its own.
SAME_RUN_WRITER = textwrap.dedent("""
    import sys, time
    from bot.store import open_store
    url, writer, keys, writes, start_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    store = open_store(url)
    while time.time() < start_at:
        time.sleep(0.001)
    failed = 0
    for i in range(writes):
        key = (writer * 7 + i) % keys
        try:
            store.add_row("shared", {"name": f"model-{key}", "batch": 1, "mode": "fp32",
                                     "status": "ok", "rate": float(key), "samples": [float(writer)] * 5,
                                     "index": key, "writer": writer})
        except Exception as exc:
            failed += 1
            print(exc, file=sys.stderr)
    sys.exit(1 if failed else 0)
""")


def test_concurrent_writers_to_one_run_upsert_every_row(db_url):
    writers, keys, writes = 6, 30, 40
    with open_store(db_url) as store:
        store.create_run({"id": "shared", "commit": "abc1234", "target": "cpu",
                          "started": "2026-11-01T10:00:00Z"})
    _run_writers(SAME_RUN_WRITER, [[db_url, w, keys, writes] for w in range(writers)])

    with open_store(db_url) as store:
        assert store.count_rows("shared") == keys
        doc = store.get_run("shared")
        assert sorted(r["name"] for r in doc["rows"]) == sorted(f"model-{k}" for k in range(keys))
        # Each row is one writer's whole write: its samples and its extra field agree.
        assert all(r["samples"] == [float(r["writer"])] * 5 for r in doc["rows"])
        with store.engine.connect() as conn:
            positions = [p for (p,) in conn.exec_driver_sql("SELECT position FROM rows")]
        assert len(positions) == keys and len(set(positions)) == keys
