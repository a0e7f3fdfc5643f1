"""perfbot results export / import / merge / validate / list, on both engines."""
from __future__ import annotations

import json
import subprocess
import sys

from bot.cli import main
from bot.store import open_store


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_export_import_round_trip_between_engines(tmp_path, db_url, capsys, doc_factory, row_factory):
    doc = doc_factory([row_factory("resnet50", 895.4, batch=64, seed=1, index=0),
                       row_factory("unet", 52.8, batch=2, mode="fp16", seed=2, index=1),
                       row_factory("dpn92", status="error", error="GPU out of memory", index=2)])
    first = tmp_path / "first.json"
    first.write_text(json.dumps(doc))
    assert _cli(capsys, "results", "import", str(first), "--db", db_url)[0] == 0

    exported = tmp_path / "exported.json"
    assert _cli(capsys, "results", "export", "run-1", "--out", str(exported), "--db", db_url)[0] == 0
    assert json.loads(exported.read_text()) == doc

    # ... into a second database of the other kind, and back out again: still the same.
    other = f"sqlite:///{tmp_path / 'other.db'}"
    assert _cli(capsys, "results", "import", str(exported), "--db", other)[0] == 0
    code, out, _ = _cli(capsys, "results", "export", "run-1", "--db", other)
    assert code == 0 and json.loads(out) == doc


def test_import_refuses_bad_files_but_keeps_good_ones(tmp_path, capsys, doc_factory, row_factory):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc_factory([row_factory("a")], run_id="good")))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc_factory([row_factory("a")], commit="nope")))
    code, out, err = _cli(capsys, "results", "import", str(bad), str(good), "--db", db)
    assert code == 2
    assert "imported" in out and "good" in out
    assert "bad.json" in err and "run.commit" in err
    with open_store(db) as store:
        assert [r["id"] for r in store.find_runs()] == ["good"]
    # Importing the same run twice is refused, not duplicated.
    assert _cli(capsys, "results", "import", str(good), "--db", db)[0] == 2


def test_merge_by_commit_then_list(db_url, capsys, row_factory):
    with open_store(db_url) as store:
        for shard in (1, 2):
            run_id = store.create_run({"id": f"shard{shard}", "commit": "c0ffee1234",
                                       "branch": "main", "target": "cpu", "shard": f"{shard}/2",
                                       "started": f"2026-11-01T10:0{shard}:00Z"})
            for i in range(shard - 1, 6, 2):
                store.add_row(run_id, row_factory(f"m{i}", seed=i, index=i))
            store.finish_run(run_id)
    code, out, _ = _cli(capsys, "results", "merge", "--commit", "c0ffee", "--id", "full",
                        "--db", db_url, "--format", "json")
    assert code == 0 and json.loads(out) == {"run_id": "full", "merged": ["shard1", "shard2"], "rows": 6}
    with open_store(db_url) as store:
        assert [r["name"] for r in store.get_run("full")["rows"]] == [f"m{i}" for i in range(6)]
    code, out, _ = _cli(capsys, "results", "list", "--branch", "main", "--db", db_url, "--format", "json")
    listed = json.loads(out)
    assert [(r["id"], r["rows"]) for r in listed] == [("full", 6)]
    code, out, _ = _cli(capsys, "results", "list", "--db", db_url)
    assert code == 0 and "full" in out and "c0ffee1234" in out
    # Nothing left to merge now; and the arguments must say what to merge.
    assert _cli(capsys, "results", "merge", "--commit", "c0ffee", "--db", db_url)[0] == 2
    assert _cli(capsys, "results", "merge", "--db", db_url)[0] == 2


def test_validate_reports_each_file(tmp_path, capsys, doc_factory, row_factory):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc_factory([row_factory("a")])))
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "perfbot.results/1", "run": {}, "rows": []}')
    code, out, _ = _cli(capsys, "results", "validate", str(good))
    assert code == 0 and "good.json: ok (1 rows)" in out
    code, out, err = _cli(capsys, "results", "validate", str(good), str(bad), "--format", "json")
    assert code == 2 and "1 of 2 file(s) invalid" in err
    assert [r["valid"] for r in json.loads(out)] == [True, False]


def test_console_script_export_of_unknown_run_is_one_line(tmp_path):
    open_store(f"sqlite:///{tmp_path / 'r.db'}").close()
    proc = subprocess.run([sys.executable, "-m", "bot", "results", "export", "nope",
                           "--db", f"sqlite:///{tmp_path / 'r.db'}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "perfbot: error: no run 'nope' in the results database"
