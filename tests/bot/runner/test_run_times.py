"""`perfbot run`: the run's start and end times are written alike (UTC as "Z"), so tables and
diffs of results documents line up."""
import json

from bot.cli import main
from bot.results_doc import validate_results
from tests.fixtures.runner.manifest import write_manifest


def test_started_and_ended_are_both_utc_with_z(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("ok", "elementwise", 1, "fp32")])
    code = main(["run", "--suite", "ok", "--manifest", str(manifest), "--db",
                 f"sqlite:///{tmp_path / 'r.db'}", "--format", "json", "--target", "cpu",
                 "--repeats", "2", "--warmup", "1", "--quiet", "--commit", "abc1234"])
    run = validate_results(json.loads(capsys.readouterr().out))["run"]
    assert code == 0
    assert run["started"].endswith("Z") and run["ended"].endswith("Z")
    assert len(run["started"]) == len(run["ended"]) == len("2026-11-29T18:07:02Z")
