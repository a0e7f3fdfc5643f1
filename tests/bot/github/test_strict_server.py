"""`perfbot post` against the GitHub fake in strict mode (``FakeGitHub(strict=True)``).

Strict mode follows GitHub's documented behaviour (page size 30 by default, 100 at most, large
ids, 201/204, full comment objects, gzip, 422 for unknown commits and over-long bodies, 401/403 as
GitHub sends them), so what passes here does not rest on a quirk of the lenient default.
"""
from __future__ import annotations

import contextlib
import json
import threading

import pytest

from bot.cli import main
from bot.github.markers import marker
from tests.fakegithub import FakeGitHub, Refusal, serve
from tests.bot.github.post_cli import BASE, FAST, HEAD, LOGIN, PR, TOKEN, post_at_once, run_post, write


@contextlib.contextmanager
def strict_server(prefix):
    with FakeGitHub(strict=True, prefix=prefix) as app:
        app.state.add_user(TOKEN, LOGIN)
        app.state.add_pull(PR, HEAD, BASE)
        yield app


@pytest.fixture(params=["/api/v3", ""], ids=["enterprise", "dotcom"])
def gh(request, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with strict_server(request.param) as app:
        yield app


def post(gh, body_file, kind="performance", *extra):
    return run_post(gh.api_url, PR, body_file, kind, *extra)


def ours(gh, kind, login=LOGIN):
    return [c for c in gh.state.comments_on(PR)
            if c.login == login and (c.body or "").startswith(marker(kind))]


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_three_posts_leave_one_comment_beyond_the_first_page(gh, tmp_path, capsys):
    # 130 comments by others (one with a null body) push ours past GitHub's default page of 30
    # and past the largest page of 100: finding it needs the Link header.
    gh.state.add_comment(PR, None, "reviewer")
    gh.state.add_comment(PR, f"{marker('performance')}\nby an account deleted since", None)
    for i in range(128):
        gh.state.add_comment(PR, f"review {i}", "reviewer")
    for i in range(3):
        assert post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\nrun {i}\n")) == 0
    mine = ours(gh, "performance")
    assert len(mine) == 1 and mine[0].body.endswith("run 2\n")
    out = capsys.readouterr().out
    assert out.count("created") == 1 and out.count("updated") == 2
    assert f"#issuecomment-{mine[0].id}" in out
    assert any(h.get("HTTP_ACCEPT_ENCODING", "").count("gzip") for _, _, h in gh.log)
    assert {h.get("HTTP_X_GITHUB_API_VERSION") for _, _, h in gh.log} == {"2022-11-28"}
    # Pages of 100 (GitHub's largest): two requests per listing, each listing twice per post.
    assert len([p for m, p, _ in gh.log if m == "GET" and p.endswith("/comments")]) == 3 * 2 * 2


def test_three_kinds_side_by_side(gh, tmp_path):
    for kind in ("performance", "accuracy", "coverage"):
        for _ in range(2):
            assert post(gh, write(tmp_path, f"{kind}.md", f"{kind} report\n"), kind) == 0
    assert [len(ours(gh, k)) for k in ("performance", "accuracy", "coverage")] == [1, 1, 1]


@pytest.mark.parametrize("check_runs,expect_run", [("allowed", True), ("forbidden", False), ("absent", False)])
def test_status_and_check_run(gh, tmp_path, capsys, check_runs, expect_run):
    gh.check_runs = check_runs
    body = write(tmp_path, "acc.md", "accuracy report\n")
    assert post(gh, body, "accuracy", "--status", "--state", "failure", "--format", "json") == 0
    result = json.loads(capsys.readouterr().out)
    assert [(s["sha"], s["state"], s["context"]) for s in gh.state.statuses] == [(HEAD, "failure", "perfbot/accuracy")]
    assert not [p for m, p, _ in gh.log if "/commits/" in p]  # posted straight to /statuses/SHA
    assert len(gh.state.check_runs) == int(expect_run)
    assert (result["check_run_id"] is not None) == expect_run
    if not expect_run:
        assert any("check run" in note for note in result["notes"])


def test_status_for_a_commit_github_does_not_know_is_one_readable_line(gh, tmp_path, capsys):
    unknown = "e5" * 20  # the results' commit, gone from the server (a force-push)
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body, "performance", "--status", "--state", "success", "--head-sha", unknown) != 0
    err = error_line(capsys)
    assert "No commit found" in err and str(body) in err
    assert body.exists()


def test_comment_deleted_between_list_and_edit_is_created_again(gh, tmp_path, capsys):
    assert post(gh, write(tmp_path, "perf.md", "first\n")) == 0
    first = ours(gh, "performance")[0].id

    def delete_before_edit(method, path):
        if method == "PATCH" and path.endswith(f"/issues/comments/{first}"):
            gh.state.comments.pop(first, None)  # somebody deleted it after our listing
    gh.before.append(delete_before_edit)
    assert post(gh, write(tmp_path, "perf.md", "second\n")) == 0
    mine = ours(gh, "performance")
    assert len(mine) == 1 and mine[0].id != first and mine[0].body.endswith("second\n")


def test_body_refused_as_too_long_is_one_readable_line_and_the_file_stays(gh, tmp_path, capsys):
    # A server counting the limit differently (bytes, say) refuses a body we thought short enough.
    gh.body_limit = 1000
    body = write(tmp_path, "perf.md", "x" * 2000 + "\n")
    assert post(gh, body) != 0
    err = error_line(capsys)
    assert "422" in err and "too long" in err and str(body) in err
    assert body.read_text(encoding="utf-8") == "x" * 2000 + "\n"
    assert ours(gh, "performance") == []


def test_bad_token_is_one_line_without_the_token(gh, tmp_path, capsys, monkeypatch):
    wrong = TOKEN[:-3] + "QQQ"
    monkeypatch.setenv("GITHUB_TOKEN", wrong)
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body) != 0
    err = error_line(capsys)
    assert "401" in err and "Bad credentials" in err and wrong not in err
    assert body.exists() and gh.state.comments == {}


def test_installation_token_cannot_read_user_and_still_keeps_one_comment(gh, tmp_path, capsys):
    gh.state.add_user(TOKEN, "github-actions[bot]", app=True)
    gh.state.add_comment(PR, f"{marker('performance')}\npasted by a human", "mallory")
    for i in range(2):
        assert post(gh, write(tmp_path, "perf.md", f"run {i}\n")) == 0
    mine = ours(gh, "performance", "github-actions[bot]")
    assert len(mine) == 1 and mine[0].body.endswith("run 1\n")
    assert ours(gh, "performance", "mallory")[0].body.endswith("pasted by a human")
    assert "cannot read its own user (403)" in capsys.readouterr().out


def test_app_installation_token_with_another_bot_name_converges_on_one_comment(gh, tmp_path, capsys):
    # A GitHub App's token comments as APP[bot], not github-actions[bot], and may not read /user.
    gh.state.add_user(TOKEN, "perfbot-app[bot]", app=True)
    for i in range(3):
        assert post(gh, write(tmp_path, "perf.md", f"run {i}\n")) == 0
    mine = ours(gh, "performance", "perfbot-app[bot]")
    assert len(mine) == 1 and mine[0].body.endswith("run 2\n")


SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."


@pytest.mark.timeout(60)
@pytest.mark.parametrize("status", [403, 429])
def test_a_retry_after_longer_than_max_wait_fails_at_once(gh, tmp_path, capsys, status):
    # Without a bound urllib3 would sleep the hour GitHub asks for before its first retry.
    def limited(method, path):
        if method == "GET" and "/pulls/" in path:
            raise Refusal(status, SECONDARY, headers={"Retry-After": "3600"})
    gh.before.append(limited)
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body, "performance", "--max-wait", "5") != 0
    err = error_line(capsys)
    assert str(status) in err and "secondary rate limit" in err and str(body) in err
    assert len([p for m, p, _ in gh.log if "/pulls/" in p]) == 1


def test_a_short_retry_after_is_waited_out(gh, tmp_path):
    left = [2]

    def limited(method, path):
        if method == "GET" and "/pulls/" in path and left[0]:
            left[0] -= 1
            raise Refusal(429, SECONDARY, headers={"Retry-After": "0"})
    gh.before.append(limited)
    assert post(gh, write(tmp_path, "perf.md", "perf report\n")) == 0
    assert left == [0] and len(ours(gh, "performance")) == 1


def test_a_create_whose_reply_comes_too_late_is_not_made_twice(gh, tmp_path, capsys):
    # The comment is stored but the reply outlives --timeout: the retry must look before posting.
    released = threading.Event()

    def slow_first_create(method, path, status):
        if method == "POST" and path.endswith("/comments") and not released.is_set():
            released.set()
            threading.Event().wait(3)
    gh.after.append(slow_first_create)
    assert post(gh, write(tmp_path, "perf.md", "perf report\n"), "performance", "--timeout", "1") == 0
    assert released.is_set() and len(ours(gh, "performance")) == 1
    assert len(gh.state.comments_on(PR)) == 1


def test_a_slow_read_is_retried(gh, tmp_path):
    slow = [1]

    def slow_pull(method, path, status):
        if method == "GET" and "/pulls/" in path and slow[0]:
            slow[0] -= 1
            threading.Event().wait(3)
    gh.after.append(slow_pull)
    assert post(gh, write(tmp_path, "perf.md", "perf report\n"), "performance", "--timeout", "1") == 0
    assert slow == [0] and len(ours(gh, "performance")) == 1


def test_an_enterprise_root_without_api_v3_gets_a_hint(tmp_path, capsys, monkeypatch):
    # Beside its API an Enterprise server is its web interface, which answers in HTML.
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    body = write(tmp_path, "perf.md", "perf report\n")
    with strict_server("/api/v3") as gh:
        assert main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "performance",
                     "--body", str(body), "--api-url", gh.api_url[:-len("/api/v3")], *FAST]) != 0
    err = error_line(capsys)
    assert "HTTP 404 with a text/html page" in err and "/api/v3" in err and str(body) in err


def test_a_sign_in_page_answering_200_gets_a_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)

    def sign_in_page(environ, start_response):
        page = b"<html><body>Sign in to continue</body></html>"
        start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(page)))])
        return [page]
    body = write(tmp_path, "perf.md", "perf report\n")
    with serve(sign_in_page) as root:
        assert main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "performance",
                     "--body", str(body), "--api-url", root, *FAST]) != 0
    err = error_line(capsys)
    assert "did not answer like GitHub's REST API" in err and str(body) in err


def test_results_for_an_older_commit_say_so_and_get_their_status(gh, tmp_path, capsys):
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body, "performance", "--status", "--state", "success", "--head-sha", BASE) == 0
    assert "results are stale" in capsys.readouterr().out
    mine = ours(gh, "performance")
    assert len(mine) == 1 and BASE[:7] in mine[0].body and HEAD[:7] in mine[0].body
    assert [(s["sha"], s["state"]) for s in gh.state.statuses] == [(BASE, "success")]


def test_a_secondary_rate_limit_on_a_write_is_waited_out(gh, tmp_path):
    left = [1]

    def limited(method, path):
        if method == "POST" and path.endswith("/comments") and left[0]:
            left[0] -= 1
            raise Refusal(403, SECONDARY, headers={"Retry-After": "0"})
    gh.before.append(limited)
    assert post(gh, write(tmp_path, "perf.md", "perf report\n")) == 0
    assert left == [0] and len(ours(gh, "performance")) == 1


def test_a_rate_limit_worded_differently_is_still_waited_out(gh, tmp_path):
    # The headers are GitHub's documented signal; the message wording is not.
    left = [1]

    def limited(method, path):
        if method == "POST" and path.endswith("/comments") and left[0]:
            left[0] -= 1
            raise Refusal(403, "Too many requests from this token.", headers={"Retry-After": "0"})
    gh.before.append(limited)
    assert post(gh, write(tmp_path, "perf.md", "perf report\n")) == 0
    assert left == [0] and len(ours(gh, "performance")) == 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("login,installation", [(LOGIN, False), ("perfbot-app[bot]", True)])
def test_two_posts_racing_leave_one_comment(gh, tmp_path, login, installation):
    gh.state.add_user(TOKEN, login, app=installation)
    # Both posters' lists are computed (empty) before either reply goes out, so neither can
    # create before the other has listed: the race really happens.
    gh.hold_first_lists(2)
    bodies = [write(tmp_path, f"p{i}.md", f"poster {i}\n") for i in range(2)]
    errors = post_at_once(gh.api_url, PR, "coverage", TOKEN, bodies)
    assert errors == []
    assert len([m for m, p, _ in gh.log if m == "POST" and p.endswith("/comments")]) == 2
    (only,) = gh.state.comments_on(PR)
    assert only.login == login and only.body.splitlines()[1] in ("poster 0", "poster 1")


def test_a_redirect_to_another_host_names_api_url(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)

    def moved(environ, start_response):
        where = f"http://localhost:{environ['SERVER_PORT']}{environ['PATH_INFO']}"
        start_response("301 Moved Permanently", [("Location", where), ("Content-Length", "0")])
        return [b""]
    body = write(tmp_path, "perf.md", "perf report\n")
    with serve(moved) as root:
        assert main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "performance",
                     "--body", str(body), "--api-url", root + "/api/v3", *FAST]) != 0
    err = error_line(capsys)
    assert "redirected from host 127.0.0.1 to localhost" in err and "--api-url" in err
    assert "Github(base_url" not in err and str(body) in err


def test_the_oldest_comment_vanishing_while_duplicates_are_settled_leaves_ours(gh, tmp_path):
    # A leftover comment of ours appears just as we create (so our listing missed it), and is
    # deleted just as we copy our body into it (the oldest is the one kept).
    leftover = []

    def appear_then_vanish(method, path):
        if method == "POST" and path.endswith("/comments") and not leftover:
            leftover.append(gh.state.add_comment(PR, f"{marker('performance')}\nold run", LOGIN).id)
        if method == "PATCH" and leftover and path.endswith(f"/comments/{leftover[0]}"):
            gh.state.comments.pop(leftover[0], None)
    gh.before.append(appear_then_vanish)
    assert post(gh, write(tmp_path, "perf.md", "new run\n")) == 0
    (only,) = gh.state.comments_on(PR)
    assert only.id != leftover[0] and only.body.endswith("new run\n")


def test_a_check_run_refused_as_invalid_leaves_the_status_and_a_note(gh, tmp_path, capsys):
    def invalid(method, path):
        if method == "POST" and path.endswith("/check-runs"):
            raise Refusal(422, "Validation Failed", [{"resource": "CheckRun", "field": "output",
                                                      "code": "invalid"}])
    gh.before.append(invalid)
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body, "performance", "--status", "--state", "success") == 0
    out = capsys.readouterr().out
    assert "no check run: GitHub refused it (HTTP 422 Validation Failed: CheckRun output invalid)" in out
    assert [s["state"] for s in gh.state.statuses] == ["success"] and gh.state.check_runs == []


def test_a_note_quoting_a_server_that_echoes_the_token_is_redacted(gh, tmp_path, capsys):
    def leaky(method, path):
        if method == "POST" and path.endswith("/check-runs"):
            raise Refusal(422, f"Invalid request for Authorization: token {TOKEN}")
    gh.before.append(leaky)
    body = write(tmp_path, "perf.md", "perf report\n")
    assert post(gh, body, "performance", "--status", "--state", "success", "--format", "json") == 0
    out = capsys.readouterr().out
    assert TOKEN not in out and "token ***" in out


def test_the_largest_report_that_perfbot_report_renders_is_posted_whole(gh, tmp_path, capsys):
    # The renderers and the poster share one limit: what `perfbot report` fitted into a comment,
    # `perfbot post` takes as it is, with room left for the stale-head warning.
    from reports.fit import COMMENT_LIMIT, GITHUB_COMMENT_LIMIT
    from reports.markdown import render_performance

    doc = {"schema": "perfbot.compare/1", "base": {"commit": BASE}, "head": {"commit": HEAD},
           "verdict": "recommended",
           "rows": [{"name": f"model-{i}-" + "x" * 60, "batch": 1, "mark": "ok"} for i in range(3000)]}
    text = render_performance(doc)
    assert COMMENT_LIMIT - 200 < len(text) <= COMMENT_LIMIT
    body = write(tmp_path, "perf.md", text)
    assert post(gh, body, "performance", "--head-sha", BASE) == 0  # stale: the warning is added
    (mine,) = ours(gh, "performance")
    assert len(mine.body) <= GITHUB_COMMENT_LIMIT and "cut to fit" not in mine.body
    assert mine.body.endswith(text.split("\n", 1)[1])


def test_a_report_longer_than_one_comment_is_cut_with_a_pointer_not_refused(gh, tmp_path, capsys):
    from reports.fit import GITHUB_COMMENT_LIMIT

    rows = "".join(f"| row {i} | {'y' * 80} |\n" for i in range(1500))
    text = f"{marker('accuracy')}\n<details><summary>all</summary>\n\n{rows}</details>\nverdict\n"
    url = "https://github.com/octo/widgets/actions/runs/42"
    assert post(gh, write(tmp_path, "acc.md", text), "accuracy", "--full-report", url) == 0
    out = capsys.readouterr().out
    assert "posted the part that fits" in out
    (mine,) = ours(gh, "accuracy")
    assert len(mine.body) <= GITHUB_COMMENT_LIMIT
    assert mine.body.rstrip().endswith(f"the whole report: {url}")
    assert mine.body.count("<details>") == mine.body.count("</details>")
    assert "| row 0 |" in mine.body and "| row 1499 |" not in mine.body


def test_a_link_header_to_another_host_is_one_line_naming_it(gh, tmp_path, capsys):
    # A comment listing whose next-page link names another host: PyGithub refuses to follow it
    # with a bare assertion; the user gets one line that names the host.
    for i in range(120):
        gh.state.add_comment(PR, f"review {i}", "reviewer")

    def elsewhere(environ, start_response):
        def start(status, headers, exc_info=None):
            headers = [(k, v.replace("://127.0.0.1:", "://localhost:") if k == "Link" else v)
                       for k, v in headers]
            return start_response(status, headers, exc_info)
        return gh(environ, start)
    body = write(tmp_path, "perf.md", "perf report\n")
    with serve(elsewhere) as root:
        assert run_post(root + gh.prefix, PR, body) == 2
    err = error_line(capsys)
    assert "localhost" in err and "another host" in err and "AssertionError" not in err
