"""Several shard processes writing to one database at the same moment lose nothing."""
from __future__ import annotations

import subprocess
import sys
import textwrap

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


def test_concurrent_shards_then_merge_lose_nothing(db_url):
    import time

    shards, rows = 4, 25
    open_store(db_url).close()  # not required, but keeps schema creation out of the race below
    start_at = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db_url, str(i), str(shards),
                               str(rows), str(start_at)], stderr=subprocess.PIPE, text=True)
             for i in range(shards)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * shards, errors

    with open_store(db_url) as store:
        for i in range(shards):
            assert store.count_rows(f"shard-{i}") == rows
        merged = store.merge_runs([f"shard-{i}" for i in range(shards)])
        doc = store.get_run(merged)
        assert [r["name"] for r in doc["rows"]] == [f"model-{i}" for i in range(shards * rows)]
        assert all(len(r["samples"]) == 20 for r in doc["rows"])


def test_concurrent_first_open_creates_schema_once(tmp_path, db_url):
    # Fresh database, writers race on creating the tables too.
    import time

    start_at = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db_url, str(i), "3", "5",
                               str(start_at)], stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    with open_store(db_url) as store:
        assert sum(store.count_rows(f"shard-{i}") for i in range(3)) == 15
