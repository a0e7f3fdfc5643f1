"""The stored-baseline fallback: `perfbot compare --base <branch>` takes that branch's newest
finished run on the head's target, so no one has to look run ids up by hand."""
from __future__ import annotations

import json

from bot.cli import main
from bot.store import open_store


def _seed(db_url, row_factory, doc_factory):
    with open_store(db_url) as store:
        for run_id, commit, target, started in (
                ("old-cpu", "1" * 40, "cpu", "2026-11-01T10:00:00Z"),
                ("new-cpu", "2" * 40, "cpu", "2026-11-02T10:00:00Z"),
                ("newest-gpu", "3" * 40, "gpu", "2026-11-03T10:00:00Z")):
            store.import_document(doc_factory([row_factory("a", seed=1)], run_id=run_id,
                                              commit=commit, target=target, started=started))
        store.import_document(doc_factory([row_factory("a", seed=2)], run_id="head-run",
                                          commit="4" * 40, branch="feature",
                                          started="2026-11-04T10:00:00Z"))


def test_a_branch_as_base_is_its_newest_run_on_the_heads_target(db_url, row_factory, doc_factory, capsys):
    _seed(db_url, row_factory, doc_factory)
    code = main(["compare", "--base", "main", "--head", "head-run", "--db", db_url,
                 "--format", "json", "--no-history"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["base"]["run_id"] == "new-cpu" and doc["head"]["run_id"] == "head-run"
    code = main(["report", "--base", "main", "--head", "head-run", "--db", db_url,
                 "--format", "json", "--no-history"])
    assert code == 0 and json.loads(capsys.readouterr().out)["compare"]["base"]["run_id"] == "new-cpu"


def test_a_branch_without_runs_is_one_line(db_url, row_factory, doc_factory, capsys):
    _seed(db_url, row_factory, doc_factory)
    code = main(["compare", "--base", "release", "--head", "head-run", "--db", db_url])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nor a branch with a finished run" in err


def test_runs_of_different_targets_get_a_warning(row_factory, doc_factory, tmp_path, capsys):
    for name, target in (("base", "cpu"), ("head", "gpu"), ("head2", "cpu")):
        doc = doc_factory([row_factory("a", seed=1)], run_id=name, target=target)
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    for command in ("compare", "report"):
        assert main([command, "--base", str(tmp_path / "base.json"), "--head",
                     str(tmp_path / "head.json"), "--format", "json"]) == 0
        err = capsys.readouterr().err
        assert err == ("perfbot: warning: the base run was measured on cpu and the head run on gpu; "
                       "their rates are not comparable\n")
    assert main(["compare", "--base", str(tmp_path / "base.json"), "--head",
                 str(tmp_path / "head2.json"), "--format", "json"]) == 0
    assert capsys.readouterr().err == ""
