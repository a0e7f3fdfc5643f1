"""`perfbot results list --format text`: run ids (copied into export and compare) are printed
whole, even when the table is wider than the console."""
from __future__ import annotations

from bot.cli import main
from bot.store import open_store


def test_long_run_ids_are_never_shortened(db_url, row_factory, doc_factory, capsys):
    run_id = "0123456789ab-20261129T180006-61e24f-shard-rerun-after-oom"
    with open_store(db_url) as store:
        store.import_document(doc_factory([row_factory("a")], run_id=run_id, commit="c" * 40,
                                          branch="feature/" + "x" * 60, suite="s," * 40 + "s",
                                          started="2026-11-29T18:00:06+00:00"))
    assert main(["results", "list", "--db", db_url, "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert any(run_id in line for line in out.splitlines())
    assert "…" not in out  # other columns fold onto more lines instead of being cut
