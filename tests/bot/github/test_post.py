"""`perfbot post` against a real HTTP server speaking GitHub's REST API (tests/fakegithub).

PyGithub, unmodified, talks to it through --api-url; every assertion is about the state the
server ends up in (comments, statuses, check runs) or what the command printed.
"""
from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.github.markers import marker
from tests.fakegithub import FakeGitHub
from tests.bot.github.post_cli import BASE, FAST, HEAD, LOGIN, PR, TOKEN, run_post, write


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub.with_pull(TOKEN, LOGIN, PR, HEAD, BASE, page_size=2) as server:
        yield server


def post(gh, body_file, kind="performance", *extra):
    return run_post(gh.api_url, PR, body_file, kind, *extra)


def ours(gh, kind):
    return [c for c in gh.state.comments_on(PR) if c.login == LOGIN and c.body.startswith(marker(kind))]


def compare_doc(verdict="recommended", head=HEAD, accuracy=("PASSED",), marks=("ok",)):
    return {"schema": "perfbot.compare/1", "base": {"commit": BASE}, "head": {"commit": head},
            "verdict": verdict,
            "rows": [{"name": f"m{i}", "batch": 1, "mark": m} for i, m in enumerate(marks)],
            "accuracy": [{"name": f"m{i}", "status": s} for i, s in enumerate(accuracy)]}


def test_three_posts_leave_one_comment_with_the_latest_body(gh, tmp_path, capsys):
    # Other people's comments around ours, across several pages (page size 2).
    for i in range(3):
        gh.state.add_comment(PR, f"review comment {i}", "reviewer")
    for i in range(3):
        assert post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\nrun {i}\n")) == 0
    mine = ours(gh, "performance")
    assert len(mine) == 1
    assert mine[0].body == f"{marker('performance')}\nrun 2\n"
    assert gh.count("POST", r"/issues/7/comments$") == 1
    assert gh.count("PATCH", r"/issues/comments/\d+$") == 2
    assert len(gh.state.comments_on(PR)) == 4  # nobody else's comment was touched
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("created the performance comment") and out[-1].startswith("updated")


def test_reposting_the_same_body_does_not_write(gh, tmp_path, capsys):
    body = write(tmp_path, "perf.md", f"{marker('performance')}\nsame\n")
    post(gh, body)
    post(gh, body)
    assert gh.count("PATCH", r"/issues/comments/") == 0
    assert "kept (unchanged)" in capsys.readouterr().out


def test_marker_is_added_when_the_body_lacks_it(gh, tmp_path):
    post(gh, write(tmp_path, "acc.md", "all models meet tolerance\n"), "accuracy")
    post(gh, write(tmp_path, "acc.md", "one model failed\n"), "accuracy")
    (only,) = ours(gh, "accuracy")
    assert only.body == f"{marker('accuracy')}\none model failed\n"


def test_the_three_kinds_live_side_by_side(gh, tmp_path):
    for round_ in range(2):
        for kind in ("performance", "accuracy", "coverage"):
            assert post(gh, write(tmp_path, f"{kind}.md", f"{marker(kind)}\n{kind} {round_}\n"), kind) == 0
    for kind in ("performance", "accuracy", "coverage"):
        (only,) = ours(gh, kind)
        assert only.body.endswith(f"{kind} 1\n")
    assert len(gh.state.comments_on(PR)) == 3


HOSTILE = (
    "{marker}\n"
    "| Test | Batch |\n|---|---|\n"
    "| <!-- perfbot:accuracy --> `rm -rf /` $(echo pwned) ${{{{ secrets.X }}}} @everyone | 1 |\n"
    "<script>alert(1)</script> \\u0000 \"quotes\" 'single' ‮ right-to-left 🔴\n"
    "<!-- perfbot:coverage -->\n"
)


def test_hostile_text_is_posted_byte_for_byte_and_cannot_claim_another_kind(gh, tmp_path):
    text = HOSTILE.format(marker=marker("performance"))
    post(gh, write(tmp_path, "perf.md", text))
    # An accuracy post must create its own comment, not take over the performance one whose body
    # merely contains the accuracy marker text.
    post(gh, write(tmp_path, "acc.md", f"{marker('accuracy')}\nok\n"), "accuracy")
    (perf,) = ours(gh, "performance")
    (acc,) = ours(gh, "accuracy")
    assert perf.body == text
    assert acc.id != perf.id and acc.body == f"{marker('accuracy')}\nok\n"


def test_a_spoofed_marker_by_someone_else_is_never_edited(gh, tmp_path):
    spoof = gh.state.add_comment(PR, f"{marker('performance')}\nfake results, all green", "mallory")
    post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\nreal results\n"))
    post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\nreal results 2\n"))
    assert gh.state.comments[spoof.id].body == f"{marker('performance')}\nfake results, all green"
    (mine,) = ours(gh, "performance")
    assert mine.body.endswith("real results 2\n")


def test_stale_results_get_a_warning_line_under_the_marker(gh, tmp_path, capsys):
    old_head = "c3" * 20
    post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\ntable\n"), "performance",
         "--head-sha", old_head)
    (c,) = ours(gh, "performance")
    first, second = c.body.splitlines()[:2]
    assert first == marker("performance")
    assert old_head[:7] in second and HEAD[:7] in second and "warning" in second
    assert c.body.endswith("table\n")
    assert "results are stale" in capsys.readouterr().out
    # Results for the current head (abbreviated SHA) carry no warning.
    post(gh, write(tmp_path, "perf.md", f"{marker('performance')}\ntable\n"), "performance",
         "--head-sha", HEAD[:10])
    assert ours(gh, "performance")[0].body == f"{marker('performance')}\ntable\n"


@pytest.mark.parametrize("doc,kind,state", [
    (compare_doc("recommended"), "performance", "success"),
    (compare_doc("not-recommended", marks=("ok", "regression")), "performance", "failure"),
    (compare_doc("not-recommended", accuracy=("PASSED", "FAILED")), "accuracy", "failure"),
    (compare_doc("recommended", accuracy=("PASSED",)), "accuracy", "success"),
])
def test_status_and_check_run_follow_the_compare_verdict(gh, tmp_path, doc, kind, state):
    compare = write(tmp_path, "compare.json", json.dumps(doc))
    assert post(gh, write(tmp_path, "r.md", "report\n"), kind, "--status", "--state-from", str(compare)) == 0
    (status,) = gh.state.statuses
    assert (status["sha"], status["state"], status["context"]) == (HEAD, state, f"perfbot/{kind}")
    (run,) = gh.state.check_runs
    assert (run["head_sha"], run["conclusion"], run["name"]) == (HEAD, state, f"perfbot/{kind}")
    assert run["output"]["summary"].endswith("report\n")


def test_a_status_note_leads_the_description(gh, tmp_path):
    # The privileged stage says what the verdict rests on: the PR's own code measured it.
    compare = write(tmp_path, "compare.json", json.dumps(compare_doc("recommended")))
    note = "rests on the PR's own measurements"
    assert post(gh, write(tmp_path, "r.md", "report\n"), "performance", "--status", "--state-from",
                str(compare), "--status-note", note) == 0
    (status,) = gh.state.statuses
    assert status["description"].startswith(f"{note}: ") and len(status["description"]) <= 140


def test_check_run_refused_is_only_a_note(gh, tmp_path, capsys):
    gh.check_runs = "forbidden"
    rc = post(gh, write(tmp_path, "r.md", "report\n"), "performance", "--status", "--state", "failure")
    assert rc == 0
    assert gh.state.statuses[0]["state"] == "failure" and gh.state.check_runs == []
    assert "no check run" in capsys.readouterr().out


def test_actions_token_that_cannot_read_its_user_owns_bot_comments(monkeypatch, tmp_path, capsys):
    app_token = "ghs_installationtoken0123456789abcdef"
    monkeypatch.setenv("GITHUB_TOKEN", app_token)
    with FakeGitHub() as server:
        server.state.add_user(app_token, "github-actions[bot]", app=True)
        server.state.add_pull(PR, HEAD, BASE)
        actions = []
        for i in range(2):
            assert post(server, write(tmp_path, "p.md", f"run {i}\n"), "performance", "--format", "json") == 0
            actions.append(json.loads(capsys.readouterr().out))
        (c,) = server.state.comments_on(PR)
        assert c.login == "github-actions[bot]" and c.body.endswith("run 1\n")
    assert [a["action"] for a in actions] == ["created", "updated"]
    assert "github-actions[bot]" in actions[1]["notes"][0]


@pytest.mark.parametrize("args,needle", [
    (["--repo", "no-slash"], "OWNER/NAME"),
    (["--pr", "0"], "positive"),
    (["--status"], "--state-from"),
    (["--body", "missing.md"], "does not exist"),
    (["--head-sha", "main; rm -rf /"], "--head-sha must be a commit SHA"),
])
def test_bad_input_is_one_line_before_any_request(gh, tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "ok.md", "x")
    base = {"--repo": "octo/widgets", "--pr": str(PR), "--body": "ok.md"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = ["post", "--kind", "performance", "--api-url", gh.api_url, *FAST]
    for flag, value in base.items():
        argv += [flag, value]
    argv += [a for a in args if a == "--status"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1
    assert gh.requests == []


def test_invalid_compare_document_is_rejected(gh, tmp_path, capsys):
    compare = write(tmp_path, "compare.json", json.dumps({"schema": "perfbot.compare/1", "verdict": "yes"}))
    rc = post(gh, write(tmp_path, "r.md", "x"), "performance", "--status", "--state-from", str(compare))
    assert rc == 2
    assert "does not match perfbot.compare/1" in capsys.readouterr().err
    assert gh.state.comments == {}


def test_missing_token_is_a_readable_error(gh, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_TOKEN")
    assert post(gh, write(tmp_path, "r.md", "x")) == 2
    assert "GITHUB_TOKEN is not set" in capsys.readouterr().err


def test_section_picks_one_kind_from_a_combined_report(gh, tmp_path, capsys):
    combined = write(tmp_path, "report.md", (
        f"{marker('performance')}\n| a | 1 |\nverdict\n\n"
        f"{marker('accuracy')}\n✅ a: PASSED `<!-- perfbot:coverage -->`\n"))
    for kind in ("performance", "accuracy"):
        assert post(gh, combined, kind, "--section") == 0
    (perf,) = ours(gh, "performance")
    (acc,) = ours(gh, "accuracy")
    assert perf.body == f"{marker('performance')}\n| a | 1 |\nverdict\n"
    assert acc.body == f"{marker('accuracy')}\n✅ a: PASSED `<!-- perfbot:coverage -->`\n"
    assert post(gh, combined, "coverage", "--section") == 2
    assert "holds no coverage report" in capsys.readouterr().err


def test_stale_status_goes_to_the_measured_commit_never_the_new_head(gh, tmp_path, capsys):
    old_head = "c3" * 20
    body = write(tmp_path, "r.md", "report\n")
    post(gh, body, "performance", "--status", "--state", "success", "--head-sha", old_head)
    post(gh, body, "performance", "--status", "--state", "success", "--head-sha", old_head[:8])
    assert [s["sha"] for s in gh.state.statuses] == [old_head]  # the abbreviated one set none
    assert "no status: the results name commit c3c3c3c3 only by an abbreviated SHA" in capsys.readouterr().out
