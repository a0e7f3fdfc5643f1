"""`perfbot drift`: change points among the newest runs and rows gone missing, and the one GitHub
issue that lists them (opened, edited in place, left closed) on the fake GitHub server."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from bot.cli import main
from bot.github.markers import marker
from bot.store import open_store
from tests.fakegithub import FakeGitHub
from tests.fixtures.drift.histories import record

TOKEN = "ghp_drifttesttoken0123456789abcdefABCDEF"
LOGIN = "perfbot-user"
FLAT = [1000.0 * (1 + 0.004 * ((i * 7) % 5 - 2)) for i in range(40)]
STEPPED = FLAT[:34] + [r * 0.94 for r in FLAT[34:]]   # 6 % slower from run 34 (6 runs ago)
HOSTILE = "evil|<img src=x>@team"


def _recent(hours: int) -> datetime:
    return datetime.now(timezone.utc) - timedelta(hours=hours)


@pytest.fixture
def url(tmp_path):
    """A store holding 40 runs of main: a row that stepped, one that stopped, one steady."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    with open_store(url) as store:
        commits = record(store, {"stepped": STEPPED, HOSTILE: FLAT[:39] + [None], "steady": FLAT},
                         start=_recent(48))
    return url, commits


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub() as server:
        server.state.add_user(TOKEN, LOGIN)
        yield server


def drift(url, *extra) -> int:
    return main(["drift", "--db", url, *extra])


def test_drift_lists_new_change_points_and_missing_rows(url, capsys):
    db, commits = url
    assert drift(db, "--format", "json", "--strict") == 1
    doc = json.loads(capsys.readouterr().out)
    [change] = doc["change_points"]
    assert (change["name"], change["commit"], change["runs_ago"]) == ("stepped", commits[34], 5)
    assert change["step_pct"] == pytest.approx(-6.0, abs=0.5)
    [gone] = doc["missing"]
    assert (gone["name"], gone["status"], gone["error"], gone["last_commit"]) == \
        (HOSTILE, "error", "worker crashed", commits[38])
    assert doc["stale_days"] is None and doc["runs"] == 40

    # an older step is not news
    assert drift(db, "--format", "json", "--recent", "5") == 0
    assert json.loads(capsys.readouterr().out)["change_points"] == []


def test_a_stalled_baseline_is_reported(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    with open_store(db) as store:
        record(store, {"steady": FLAT[:10]}, start=_recent(24 * 30))
    assert drift(db, "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["stale_days"] == pytest.approx(30, abs=0.5)
    assert drift(db, "--format", "json", "--stale-days", "0") == 0
    assert json.loads(capsys.readouterr().out)["stale_days"] is None


def test_markdown_escapes_stored_names(url, capsys):
    db, _ = url
    assert drift(db, "--format", "markdown") == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "@team" not in out and "evil\\|" in out
    assert "#### Change points in the newest 10 runs" in out and "| 🔴 -5.8" in out


def _issues(gh):
    return sorted(gh.state.issues.values(), key=lambda i: i.number)


def test_one_issue_is_opened_then_edited_in_place(url, gh, tmp_path, capsys):
    db, _ = url
    post = ["--repo", "octo/widgets", "--api-url", gh.api_url]
    assert drift(db, *post) == 0
    [issue] = _issues(gh)
    assert issue.body.startswith(marker("drift") + "\n") and issue.title == "perfbot: performance drift on main"
    assert "<img" not in issue.body and "stepped" in issue.body
    assert "drift issue created #1" in capsys.readouterr().err

    assert drift(db, *post) == 0
    assert "drift issue unchanged #1" in capsys.readouterr().err

    with open_store(db) as store:  # the row is back: the same issue now lists only the step
        record(store, {"stepped": STEPPED[-1:] * 1, HOSTILE: FLAT[:1], "steady": FLAT[:1]},
               start=_recent(1))
    assert drift(db, *post) == 0
    [issue] = _issues(gh)
    assert "drift issue updated #1" in capsys.readouterr().err
    assert "went missing" not in issue.body and "stepped" in issue.body


def test_a_closed_issue_stays_closed_until_the_findings_change(url, gh, capsys):
    db, _ = url
    post = ["--repo", "octo/widgets", "--api-url", gh.api_url]
    assert drift(db, *post) == 0
    gh.state.edit_issue(1, {"state": "closed"})
    assert drift(db, *post) == 0
    assert "drift issue kept-closed #1" in capsys.readouterr().err and len(gh.state.issues) == 1
    assert drift(db, *post, "--recent", "5") == 0  # only the missing row now: new findings
    assert "drift issue created #2" in capsys.readouterr().err
    assert [i.state for i in _issues(gh)] == ["closed", "open"]


def test_nothing_to_report_opens_no_issue(tmp_path, gh, capsys):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    with open_store(db) as store:
        record(store, {"steady": FLAT}, start=_recent(48))
    assert drift(db, "--repo", "octo/widgets", "--api-url", gh.api_url) == 0
    assert gh.state.issues == {} and "drift issue none" in capsys.readouterr().err


def test_a_marked_issue_by_someone_else_is_not_ours(url, gh, capsys):
    db, _ = url
    gh.state.add_user("other-token", "mallory")
    gh.state.add_issue("fake", f"{marker('drift')}\nhello", "mallory")
    assert drift(db, "--repo", "octo/widgets", "--api-url", gh.api_url) == 0
    assert [(i.login, i.body.startswith(marker("drift"))) for i in _issues(gh)] == \
        [("mallory", True), (LOGIN, True)]
    assert _issues(gh)[0].body == f"{marker('drift')}\nhello"


@pytest.mark.parametrize("argv, message", [
    (["--recent", "0"], "--recent must be at least 1"),
    (["--missing-runs", "0"], "--missing-runs must be at least 1"),
    (["--repo", "nope"], "--repo must be OWNER/NAME"),
])
def test_drift_mistakes_are_one_line(url, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    assert drift(url[0], *argv) == 2
    assert message in capsys.readouterr().err


def test_a_missing_token_is_one_line(url, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    assert drift(url[0], "--repo", "octo/widgets") == 2
    assert "GITHUB_TOKEN is not set; it must hold a token that may open issues" in capsys.readouterr().err
