"""``perfbot calibrate`` end to end on the cpu target (real worker processes, a real store): the
time limit, which records the rows it did not start instead of losing the rows done."""
import json

from bot.cli import main
from bot.results_doc import validate_results
from tests.fixtures.runner.manifest import write_manifest

FAST = ["--target", "cpu", "--repeats", "2", "--warmup", "1", "--quiet", "--min-sample-s", "0.01"]


def test_rows_that_would_end_past_the_time_limit_are_recorded_not_calibrated(tmp_path, capsys, monkeypatch):
    """The budget's clock is the test's: 100 s pass at each look, so the first row starts (100 s
    of 150) and the second does not (200 s)."""
    from bot.runner import calibrate as calibrate_module
    from bot.runner.time_budget import TimeBudget

    ticks = iter(range(0, 10_000, 100))
    monkeypatch.setattr(calibrate_module, "TimeBudget", lambda limit: TimeBudget(limit, lambda: float(next(ticks))))
    monkeypatch.chdir(tmp_path)  # worker logs go under ./.perfbot
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    manifest = write_manifest(tmp_path / "m", [("first", "elementwise", 2, "fp32"),
                                               ("second", "elementwise", 1, "fp32")])
    code = main(["calibrate", "--suite", "all", "--manifest", str(manifest), "--rounds", "3",
                 "--db", f"sqlite:///{tmp_path / 'r.db'}", "--format", "json", "--time-limit", "150", *FAST])
    doc = validate_results(json.loads(capsys.readouterr().out))
    assert code == 0
    first, second = doc["rows"]
    assert first["name"] == "first" and first["status"] == "ok" and first["calibration"]["processes"] == 6
    assert second["name"] == "second" and second["status"] == "error"
    assert "not measured: the time limit (150 s, --time-limit)" in second["error"]


def test_a_time_limit_must_be_positive(tmp_path, capsys):
    code = main(["calibrate", "--suite", "smoke", "--db", f"sqlite:///{tmp_path / 'r.db'}", "--time-limit", "0",
                 *FAST])
    assert code != 0 and "--time-limit must be a positive number of seconds, got 0" in capsys.readouterr().err
