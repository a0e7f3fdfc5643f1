"""Retries, racing posts and outages of `perfbot post`, with faults injected by the fake GitHub."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from bot.cli import main
from bot.github import GitHubUnavailableError, PostRequest, RetryPolicy, post_report
from bot.github.markers import marker
from common.errors import UserError
from tests.fakegithub import FakeGitHub, bad_gateway, rate_limited, too_many_requests
from tests.bot.github.post_cli import FAST, post_at_once, run_post
from tests.paths import ROOT

TOKEN = "ghp_reliabilitytoken0123456789abcdefXYZ"
LOGIN = "perfbot-user"
PR = 12
HEAD = "d4" * 20
BASE = "e5" * 20
REPO_ROOT = ROOT


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub.with_pull(TOKEN, LOGIN, PR, HEAD, BASE) as server:
        yield server


@pytest.fixture
def body(tmp_path):
    path = tmp_path / "performance.md"
    path.write_text(f"{marker('performance')}\n| Test | Batch |\n", encoding="utf-8")
    return path


def post(gh, body_file, *extra):
    return run_post(gh.api_url, PR, body_file, "performance", *extra)


def comments(gh):
    return gh.state.comments_on(PR)


def test_5xx_on_reads_is_retried_by_pygithub(gh, body):
    gh.inject(bad_gateway("GET", r"/pulls/12$", count=2), bad_gateway("GET", r"/comments$", count=1))
    assert post(gh, body) == 0
    assert len(comments(gh)) == 1
    assert gh.count("GET", r"/pulls/12$") == 3


def test_5xx_on_the_edit_is_retried_by_our_loop(gh, body, tmp_path):
    post(gh, body)
    gh.inject(bad_gateway("PATCH", r"/issues/comments/\d+$", count=3))
    newer = tmp_path / "newer.md"
    newer.write_text("second run\n", encoding="utf-8")
    assert post(gh, newer) == 0
    assert gh.count("PATCH", r"/issues/comments/") == 4
    (only,) = comments(gh)
    assert only.body.endswith("second run\n")


def test_create_whose_reply_is_lost_is_not_repeated(gh, body):
    # The comment is stored, then the proxy answers 502: a blind retry would post it twice.
    gh.inject(bad_gateway("POST", r"/issues/12/comments$", count=1, after_work=True))
    assert post(gh, body) == 0
    assert gh.count("POST", r"/issues/12/comments$") == 1
    assert len(comments(gh)) == 1


def test_rate_limit_403_and_429_retry_after_are_waited_out(gh, body, tmp_path):
    gh.inject(rate_limited("GET", r"/comments$", count=1),
              too_many_requests("POST", r"/issues/12/comments$", count=1),
              too_many_requests("GET", r"/pulls/12$", count=1))
    assert post(gh, body) == 0
    assert len(comments(gh)) == 1
    gh.inject(rate_limited("PATCH", r"/issues/comments/", count=1),
              too_many_requests("PATCH", r"/issues/comments/", count=1))
    newer = tmp_path / "newer.md"
    newer.write_text("after the limit\n", encoding="utf-8")
    assert post(gh, newer) == 0
    (only,) = comments(gh)
    assert only.body.endswith("after the limit\n")
    assert gh.count("PATCH", r"/issues/comments/") == 3


def test_permanent_outage_fails_readably_and_keeps_the_report(gh, body, capsys):
    before = body.read_bytes()
    gh.inject(bad_gateway("*", "", count=None))
    rc = post(gh, body, "--retries", "3")
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert len(err.splitlines()) == 1
    assert err.startswith("perfbot: error: could not post the performance report to octo/widgets#12")
    assert "GitHub answered HTTP 502 Bad Gateway" in err and str(body) in err
    assert body.read_bytes() == before
    assert gh.count("GET", r"/repos/octo/widgets$") == 3


def test_outage_of_writes_only_exhausts_our_retries(gh, body):
    gh.inject(bad_gateway("POST", "", count=None))
    request = PostRequest("octo/widgets", PR, "performance", body, TOKEN, gh.api_url,
                          policy=RetryPolicy(attempts=4, backoff=0.001, pace=0))
    with pytest.raises(GitHubUnavailableError) as info:
        post_report(request)
    assert isinstance(info.value, UserError)
    assert "after 4 attempts" in str(info.value)
    assert gh.count("POST", "") == 4 and comments(gh) == []
    assert body.exists()


def test_unreachable_server_is_one_line(body, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["post", "--repo", "octo/widgets", "--pr", "1", "--kind", "performance", "--body", str(body),
               "--api-url", f"http://127.0.0.1:{port}/api/v3", *FAST, "--retries", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "GitHub is unavailable (network error: connection refused" in err


def test_rate_limit_beyond_max_wait_gives_up_at_once(gh, body):
    # A real process, so that what PyGithub's own log handler writes to stderr is seen too.
    gh.inject(rate_limited("GET", "", count=None, reset_in=3600))
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "post", "--repo", "octo/widgets", "--pr", str(PR), "--kind",
         "performance", "--body", str(body), "--api-url", gh.api_url, *FAST, "--max-wait", "5"],
        cwd=REPO_ROOT, env={**os.environ, "GITHUB_TOKEN": TOKEN}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "GitHub answered HTTP 403 rate limit exceeded (resets at" in err
    assert len(err.splitlines()) == 1, err  # PyGithub's retry chatter stays out of the way
    assert gh.count("GET", "") == 1


def test_missing_pull_request_is_not_retried(gh, body, capsys):
    rc = main(["post", "--repo", "octo/widgets", "--pr", "99", "--kind", "coverage", "--body", str(body),
               "--api-url", gh.api_url, *FAST])
    assert rc == 2
    assert "GitHub answered HTTP 404 Not Found" in capsys.readouterr().err
    assert gh.count("GET", r"/pulls/99$") == 1


def test_two_processes_racing_leave_one_comment(gh, tmp_path):
    # Both listings are held until both posters have asked, so both see no comment and create.
    gh.hold_first_lists(2)
    procs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.md"
        path.write_text(f"{marker('performance')}\nfrom {name}\n", encoding="utf-8")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "bot", "post", "--repo", "octo/widgets", "--pr", str(PR),
             "--kind", "performance", "--body", str(path), "--api-url", gh.api_url, *FAST],
            cwd=REPO_ROOT, env={**os.environ, "GITHUB_TOKEN": TOKEN},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert gh.count("POST", r"/issues/12/comments$") == 2  # the race really happened
    (only,) = comments(gh)
    assert only.body.splitlines()[1] in ("from a", "from b")


def test_threads_racing_repeatedly_converge(gh, tmp_path):
    for round_ in range(3):
        gh.hold_first_lists(3)
        bodies = [tmp_path / f"r{round_}-{i}.md" for i in range(3)]
        for i, path in enumerate(bodies):
            path.write_text(f"round {round_} poster {i}\n", encoding="utf-8")
        errors = post_at_once(gh.api_url, PR, "accuracy", TOKEN, bodies)
        assert errors == []
        (only,) = comments(gh)
        assert only.body.startswith(f"{marker('accuracy')}\nround {round_} poster ")
