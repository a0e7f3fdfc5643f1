"""Change points of a row's stored rates (bot.drift.changepoints, `perfbot history`): planted
steps of 3 % or more are found within two runs of where they were planted, and flat series
rarely get one. Histories are seeded (tests/fixtures/drift), so every run of the test sees the
same series."""
import json

import pytest

from bot.cli import main
from bot.drift.changepoints import find_change_points
from bot.store import open_store
from tests.fixtures.drift.histories import planted_history, record

SERIES = 100   # series with planted steps, per noise kind
FLAT = 200     # series without


def _missed(seed: int, hiccups: float) -> list:
    planted = planted_history(seed, hiccups=hiccups)
    found = [c.index for c in find_change_points(planted.rates)]
    return [(seed, at, size) for at, size in planted.steps if not any(abs(f - at) <= 2 for f in found)]


@pytest.mark.parametrize("hiccups", [0.0, 0.03], ids=["gaussian", "with-hiccups"])
def test_every_planted_step_of_three_percent_or_more_is_found_within_two_runs(hiccups):
    missed = [m for seed in range(SERIES) for m in _missed(seed, hiccups)]
    assert missed == []


@pytest.mark.parametrize("hiccups", [0.0, 0.03], ids=["gaussian", "with-hiccups"])
def test_fewer_than_one_flat_series_in_twenty_gets_a_change_point(hiccups):
    false = [seed for seed in range(FLAT)
             if find_change_points(planted_history(10_000 + seed, steps=0, hiccups=hiccups).rates)]
    assert len(false) < FLAT / 20, false


def test_a_step_reports_the_medians_either_side():
    rates = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 95.0, 94.0, 96.0, 95.5, 94.5, 95.0]
    [change] = find_change_points(rates)
    assert change.index == 6 and change.before == 100.0 and change.after == 95.0
    assert change.step_pct == pytest.approx(-5.0)


@pytest.mark.parametrize("rates", [[], [1.0] * 5, [100.0] * 40, [100.0, float("nan")] * 10,
                                   [100.0, 0.0] * 10])
def test_short_constant_or_unusable_series_have_none(rates):
    assert find_change_points(rates) == []


def test_a_small_step_in_a_quiet_row_is_below_the_minimum_magnitude():
    rates = [1000.0 + (i % 3) * 0.1 for i in range(20)] + [1010.0 + (i % 3) * 0.1 for i in range(20)]
    assert find_change_points(rates) == []                               # 1 %: under the 2 % rule
    assert [c.index for c in find_change_points(rates, min_step_pct=0.5)] == [20]


def test_history_lists_the_stored_runs_and_marks_the_change_points(db_url, capsys):
    planted = planted_history(3, steps=2)
    with open_store(db_url) as store:
        commits = record(store, {"resnet": planted.rates, "other": [500.0] * len(planted.rates)})
        record(store, {"resnet": [1.0] * 10}, branch="feature")  # other branches stay out
    assert main(["history", "resnet", "--db", db_url, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [row] = doc["rows"]
    assert (doc["branch"], doc["target"], row["name"], len(row["points"])) == \
        ("main", "gpu", "resnet", len(planted.rates))
    assert [p["rate"] for p in row["points"]] == pytest.approx(planted.rates)
    marked = [c["index"] for c in row["change_points"]]
    assert len(marked) == 2 and all(abs(m - at) <= 2 for m, (at, _) in zip(marked, planted.steps))
    assert [c["commit"] for c in row["change_points"]] == [commits[m] for m in marked]
    assert [p["step_pct"] is not None for p in row["points"]].count(True) == 2

    assert main(["history", "resnet/1/fp32", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert text.count("◆ step") == 2 and "resnet b1 fp32 on main (gpu)" in text


def test_history_markdown_escapes_stored_names(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    name = "evil|<img src=x>@team"
    with open_store(url) as store:
        record(store, {name: [100.0] * 8 + [None] + [100.0] * 3})
    assert main(["history", name, "--db", url, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "evil\\|" in out and "@team" not in out
    assert "error: worker crashed" in out


@pytest.mark.parametrize("argv, message", [
    (["history", "nope"], "no finished run of branch 'main' has row 'nope'"),
    (["history", "x", "--limit", "0"], "--limit must be at least 1"),
    (["history", "x", "--min-step", "0"], "--min-step must be between 0 and 100 percent"),
])
def test_history_mistakes_are_one_line(tmp_path, capsys, argv, message):
    assert main([*argv, "--db", f"sqlite:///{tmp_path / 'r.db'}"]) == 2
    assert message in capsys.readouterr().err
