"""The store's API against both engines (see the db_url fixture)."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from bot.store import SCHEMA_VERSION, StoreError, open_store


@pytest.fixture
def store(db_url):
    with open_store(db_url) as opened:
        yield opened


def _run(commit="abc1234", **fields):
    return {"commit": commit, "target": "cpu", "started": "2026-11-01T10:00:00Z", **fields}


def test_rows_round_trip_with_samples_and_accuracy(store, row_factory, doc_factory):
    run_id = store.create_run(_run(branch="main", suite="smoke"))
    rows = [row_factory("resnet50", 900.0, batch=64, seed=1),
            row_factory("bert", 700.0, mode="fp16", seed=2, note="extra fields survive"),
            row_factory("broken", status="error", error="unsupported operator Foo")]
    for row in rows:
        store.add_row(run_id, row)
    store.finish_run(run_id, "2026-11-01T11:00:00+00:00")

    doc = store.get_run(run_id)
    assert doc["rows"] == rows
    assert doc["run"]["ended"] == "2026-11-01T11:00:00+00:00"
    assert store.recorded_rows(run_id) == {("resnet50", 64, "fp32"), ("bert", 1, "fp16"),
                                           ("broken", 1, "fp32")}


def test_add_row_replaces_same_key_in_place(store, row_factory, doc_factory):
    run_id = store.create_run(_run())
    store.add_row(run_id, row_factory("a", 10.0, seed=1))
    store.add_row(run_id, row_factory("b", 20.0, seed=2))
    store.add_row(run_id, row_factory("a", 12.0, seed=3, n=5))
    rows = store.get_run(run_id)["rows"]
    assert [r["name"] for r in rows] == ["a", "b"]
    assert len(rows[0]["samples"]) == 5 and rows[0]["rate"] == pytest.approx(12.0, rel=0.05)
    assert store.count_rows(run_id) == 2


def test_generated_ids_are_unique_and_given_ids_are_kept(store, row_factory, doc_factory):
    ids = {store.create_run(_run()) for _ in range(5)}
    assert len(ids) == 5
    assert store.create_run(_run(id="nightly-42")) == "nightly-42"
    with pytest.raises(StoreError, match="already"):
        store.create_run(_run(id="nightly-42"))


def test_bad_input_is_one_line_error(store, row_factory, doc_factory):
    with pytest.raises(Exception, match="commit"):
        store.create_run(_run(commit="not a sha"))
    run_id = store.create_run(_run())
    with pytest.raises(Exception, match="batch"):
        store.add_row(run_id, {"name": "x", "batch": 0, "mode": "fp32", "status": "ok"})
    with pytest.raises(StoreError, match="no run"):
        store.add_row("missing-run", row_factory("x"))
    with pytest.raises(StoreError, match="no run"):
        store.get_run("missing-run")


def test_find_runs_newest_first_by_prefix_and_filters(store, row_factory, doc_factory):
    store.create_run(_run("abc1234aa", id="r1", branch="main", started="2026-11-01T10:00:00Z"))
    # Written in another zone but later in UTC: must sort after r1.
    store.create_run(_run("abc1234bb", id="r2", branch="main", started="2026-11-01T12:30:00+02:00"))
    store.create_run(_run("def5678", id="r3", branch="dev", started="2026-11-02T10:00:00Z"))
    assert [r["id"] for r in store.find_runs()] == ["r3", "r2", "r1"]
    assert [r["id"] for r in store.find_runs(commit="abc1234")] == ["r2", "r1"]
    assert [r["id"] for r in store.find_runs(commit="ABC1234B")] == ["r2"]
    assert [r["id"] for r in store.find_runs(branch="dev")] == ["r3"]
    assert [r["id"] for r in store.find_runs(limit=1)] == ["r3"]
    assert store.find_runs(commit="abc_") == []  # LIKE wildcards are escaped


def test_latest_run_skips_unfinished_and_shards(store, row_factory, doc_factory):
    assert store.latest_run("main") is None
    done = store.create_run(_run(id="done", branch="main", started="2026-11-01T10:00:00Z"))
    store.finish_run(done)
    store.create_run(_run(id="running", branch="main", started="2026-11-02T10:00:00Z"))
    shard = store.create_run(_run(id="shard", branch="main", shard="1/2",
                                  started="2026-11-03T10:00:00Z"))
    store.finish_run(shard)
    assert store.latest_run("main")["id"] == "done"
    assert store.latest_run("main", target="gpu") is None


def test_history_oldest_first_only_ok_rows_of_branch(store, row_factory, doc_factory):
    for day in range(1, 6):
        run_id = store.create_run(_run(f"{day:07x}", id=f"day{day}", branch="main",
                                       started=f"2026-11-0{day}T10:00:00Z"))
        store.add_row(run_id, row_factory("m", 100.0 + day, seed=day, n=3))
    failed = store.create_run(_run(id="failed", branch="main", started="2026-11-09T10:00:00Z"))
    store.add_row(failed, row_factory("m", status="error"))
    other = store.create_run(_run(id="other", branch="dev", started="2026-11-08T10:00:00Z"))
    store.add_row(other, row_factory("m", 50.0))

    hist = store.history("m", 1, "fp32", branch="main", limit=3)
    assert [h["run_id"] for h in hist] == ["day3", "day4", "day5"]
    assert hist[-1]["commit"] == "0000005" and len(hist[-1]["samples"]) == 3
    assert set(hist[0]) == {"commit", "run_id", "started", "rate", "samples"}
    assert len(store.history("m", 1, "fp32")) == 6
    assert store.history("m", 2, "fp32") == []


def test_coverage_newest_report_of_commit(store, row_factory, doc_factory):
    assert store.load_coverage("abc1234") is None
    store.save_coverage("abc1234ff", "cobertura", b"<coverage old/>", branch="main")
    store.save_coverage("abc1234ff", "lcov", b"TN:\x00binary-safe\n")
    assert store.load_coverage("abc1234") == ("lcov", b"TN:\x00binary-safe\n")


def test_import_document_then_get_is_identity(store, row_factory, doc_factory):
    doc = doc_factory([row_factory("a", seed=1), row_factory("b", seed=2, mode="fp16")])
    assert store.import_document(doc) == "run-1"
    assert store.get_run("run-1") == doc
    with pytest.raises(StoreError, match="already"):
        store.import_document(doc)


def test_reopening_keeps_data_and_newer_schema_is_refused(db_url):
    with open_store(db_url) as first:
        first.create_run(_run(id="kept"))
    with open_store(db_url) as second:
        assert second.find_runs()[0]["id"] == "kept"
        with second.engine.begin() as conn:
            conn.execute(text("UPDATE schema_version SET version = :v"), {"v": SCHEMA_VERSION + 1})
    with pytest.raises(StoreError, match="newer"):
        open_store(db_url)


def test_default_url_is_sqlite_file_in_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFBOT_DB_URL", raising=False)
    with open_store() as store:
        store.create_run(_run(id="here"))
    assert (tmp_path / ".perfbot" / "results.db").is_file()
    engine = create_engine(f"sqlite:///{tmp_path / '.perfbot' / 'results.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_unreachable_database_is_one_line_without_password():
    with pytest.raises(StoreError) as info:
        open_store("postgresql://user:s3cret@127.0.0.1:1/nothing")
    message = str(info.value)
    assert "s3cret" not in message and "\n" not in message and "127.0.0.1" in message


def test_unusable_urls_are_one_line_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for url, fragment in ((f"sqlite:///{blocker}/sub/r.db", "cannot create"),
                          ("garbage", "not a database URL"),
                          ("mysql://u:pw@h/db", "cannot use database")):
        with pytest.raises(StoreError, match=fragment) as info:
            open_store(url)
        assert "pw" not in str(info.value) and "\n" not in str(info.value)
