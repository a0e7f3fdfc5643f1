"""Commit status and check run for a report, so a branch rule can block the merge on it."""
from __future__ import annotations

import time
from collections.abc import Callable

from github import GithubException
from github.Commit import Commit
from github.Repository import Repository

from bot.github.describe import describe
from bot.github.retry import RetryPolicy, call_with_retries

# GitHub's limits on a check run's output summary and a status description.
SUMMARY_LIMIT = 65535
DESCRIPTION_LIMIT = 140


def context_for(kind: str) -> str:
    return f"perfbot/{kind}"


def set_commit_status(repo: Repository, sha: str, kind: str, state: str, description: str,
                      target_url: str | None = None, policy: RetryPolicy | None = None,
                      sleep: Callable[[float], None] = time.sleep) -> None:
    """Set the ``perfbot/KIND`` status; posting the same context again replaces it on GitHub."""
    # ``repo.get_commit`` would first GET the commit (its files included) only to learn the URL
    # the status is posted under; a lazy object posts straight away.
    commit = Commit(repo.requester.withLazy(True), url=f"{repo.url}/commits/{sha}")
    extra = {"target_url": target_url} if target_url else {}
    call_with_retries(
        lambda _n: commit.create_status(state=state, description=description[:DESCRIPTION_LIMIT],
                                        context=context_for(kind), **extra),
        policy or RetryPolicy(), sleep)


def create_check_run(repo: Repository, sha: str, kind: str, state: str, description: str,
                     body: str, policy: RetryPolicy | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> tuple[int | None, str | None]:
    """A completed check run with the report as its summary, when the token may create one.

    Only GitHub Apps (and Actions' token with ``checks: write``) can create check runs; a personal
    token gets 403 and an older Enterprise server 404. Those are not failures of the post: the
    status above already carries the verdict. Returns the run's id, or None and a note.
    """
    conclusion = {"success": "success", "failure": "failure"}.get(state, "neutral")
    try:
        run = call_with_retries(
            lambda _n: repo.create_check_run(
                name=context_for(kind), head_sha=sha, status="completed", conclusion=conclusion,
                output={"title": description[:DESCRIPTION_LIMIT], "summary": body[:SUMMARY_LIMIT]}),
            policy or RetryPolicy(), sleep)
    except GithubException as exc:
        if exc.status in (403, 404):
            return None, f"no check run: the token may not create one ({exc.status}); the commit status was set"
        if 400 <= (exc.status or 0) < 500 and exc.status != 429:
            # Refused as invalid (a server with other limits on names or output): the status
            # already carries the verdict, so the post has done its job.
            return None, f"no check run: GitHub refused it ({describe(exc)}); the commit status was set"
        raise
    return run.id, None
