"""The token never reaches output, logs or exception text, even when the server echoes it."""
from __future__ import annotations

import logging
import traceback
import urllib.parse

import pytest

from bot.cli import main
from bot.github import GitHubPostError, PostRequest, Redactor, RetryPolicy, post_report
from tests.fakegithub import FakeGitHub, leaky

TOKEN = "ghp_Zz9secret+/token=value0123456789abc"
PR = 3
HEAD = "f6" * 20


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub.with_pull(TOKEN, "perfbot-user", PR, HEAD, "0a" * 20) as server:
        yield server


@pytest.fixture
def body(tmp_path):
    path = tmp_path / "coverage.md"
    path.write_text("coverage report\n", encoding="utf-8")
    return path


def forms_of_token() -> list[str]:
    return [TOKEN, urllib.parse.quote(TOKEN, safe=""), urllib.parse.quote_plus(TOKEN)]


def assert_clean(text: str) -> None:
    for form in forms_of_token():
        assert form not in text


def test_the_fake_server_really_echoes_the_token(gh, body):
    # Guard for the tests below: without redaction the token would be in the reply.
    gh.inject(leaky("GET", r"/pulls/"))
    import requests

    reply = requests.get(f"{gh.api_url}/repos/octo/widgets/pulls/{PR}",
                         headers={"Authorization": f"token {TOKEN}"}, timeout=10)
    assert TOKEN in reply.text


@pytest.mark.parametrize("status", [500, 403, 422])
def test_echoed_token_is_masked_in_stderr_stdout_and_logs(gh, body, capsys, caplog, status):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub logs whole replies at DEBUG
    gh.inject(leaky("GET", r"/pulls/", status=status))
    rc = main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "coverage", "--body", str(body),
               "--api-url", gh.api_url, "--pace", "0", "--backoff", "0.001", "--retries", "2"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "Authorization: token ***" in err
    assert_clean(out + err)
    assert "/pulls/3" in caplog.text  # PyGithub did log the exchange, reply included
    assert_clean(caplog.text)
    assert_clean("\n".join(str(r.args) for r in caplog.records))


def test_exception_text_and_traceback_are_clean(gh, body):
    gh.inject(leaky("*", "", status=502))
    request = PostRequest("octo/widgets", PR, "coverage", body, TOKEN, gh.api_url,
                          policy=RetryPolicy(attempts=2, backoff=0.001, pace=0))
    with pytest.raises(GitHubPostError) as info:
        post_report(request)
    exc = info.value
    shown = "".join(traceback.format_exception(exc))
    assert "***" in str(exc)
    assert_clean(str(exc) + repr(exc) + shown)
    assert exc.__cause__ is None and exc.__context__ is None  # no raw PyGithub error chained on


def test_success_output_never_holds_the_token(gh, body, capsys):
    rc = main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "coverage", "--body", str(body),
               "--api-url", gh.api_url, "--pace", "0", "--format", "json"])
    assert rc == 0
    out, err = capsys.readouterr()
    assert_clean(out + err)
    assert f"token {TOKEN}" in gh.auth_headers  # it was sent, as a header only


def test_redactor_masks_every_encoding_and_ignores_tiny_secrets():
    redact = Redactor(TOKEN, "", None, "ab")
    text = " ".join(forms_of_token()) + " ab cab"
    assert redact(text) == "*** *** *** ab cab"
