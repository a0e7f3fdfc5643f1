"""The worker's profile command, and profiles stored with a run's rows (SQLite, PostgreSQL)."""
from __future__ import annotations

import pytest

from bot import results_doc
from bot.runner.session import WorkerSession
from bot.store import open_store
from tests.fixtures.runner.helpers import CODE_ROOT, compile_command, model_and_feeds


@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_the_worker_times_each_instruction_of_the_compiled_row(tmp_path, target):
    model, feeds = model_and_feeds(tmp_path)
    session = WorkerSession(CODE_ROOT, tmp_path / "worker.log")
    try:
        session.start(60)
        session.request(compile_command("e", model, feeds, target), 60)
        reply = session.request({"cmd": "profile", "row": "e", "runs": 2}, 60)
    finally:
        session.close()
    entries = reply["profile"]
    assert entries and all(e["mean_us"] > 0 and e["root"] == "main" for e in entries)
    if target == "ref":
        assert {e["name"] for e in entries} == {"relu", "mul", "add"}


def test_a_profile_round_trips_through_the_store(db_url, row_factory, doc_factory):
    profile = [{"root": "main", "name": "conv|@x", "op": "Conv", "calls": 1, "mean_us": 12.5}]
    row = row_factory("a", 10.0, profile=profile)
    results_doc.validate_results(doc_factory([row]))
    with open_store(db_url) as store:
        run_id = store.create_run({"commit": "abc1234", "target": "cpu",
                                   "started": "2026-11-01T10:00:00Z"})
        store.add_row(run_id, row)
        assert store.get_run(run_id)["rows"][0]["profile"] == profile
