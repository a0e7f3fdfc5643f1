"""One open issue per kind (the drift report), found by the hidden marker on its first line and
edited in place on every scheduled check.

An issue is ours when it starts with the kind's marker and was opened by our login, as for the
sticky comments. Only the newest of ours counts: while it is open it is edited; once a person
closed it, it stays closed as long as the findings are those it listed (their fingerprint is a
second hidden line), and new findings open a new issue. With nothing to report no issue is
opened, and an open one is edited to say so.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from bot.github.client import authenticated_login, connect
from bot.github.comments import is_ours
from bot.github.errors import GitHubPostError
from bot.github.markers import with_marker
from bot.github.post import COMMENT_LIMIT, check_api_url, check_repo_and_token, talk_guarded
from bot.github.redact import Redactor
from bot.github.retry import RetryPolicy, call_with_retries

FINDINGS = "<!-- perfbot:findings {} -->"


@dataclasses.dataclass
class IssueRequest:
    repo: str                  # OWNER/NAME
    kind: str                  # one of markers.ISSUE_KINDS
    title: str
    body: str                  # Markdown, without the marker lines
    findings: str | None       # fingerprint of what the body reports; None: nothing to report
    token: str
    api_url: str | None = None
    author: str | None = None  # whose issues are ours; default: the token's user
    policy: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)
    timeout: float = 30.0


@dataclasses.dataclass
class IssueOutcome:
    action: str                # created, updated, unchanged, kept-closed or none
    number: int | None = None
    url: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


def full_body(req: IssueRequest) -> str:
    fingerprint = FINDINGS.format(req.findings or "none")
    return with_marker(f"{fingerprint}\n{req.body}", req.kind)


def post_issue(req: IssueRequest, sleep: Callable[[float], None] = time.sleep) -> IssueOutcome:
    """Open, edit or leave the ``req.kind`` issue of ``req.repo``; see the module docstring."""
    check_repo_and_token(req.repo, req.token, "open issues")
    if req.api_url is not None:
        check_api_url(req.api_url, req.token)
    body = full_body(req)
    if len(body) > COMMENT_LIMIT:
        raise GitHubPostError(f"the {req.kind} report has {len(body)} characters; an issue holds "
                              f"at most {COMMENT_LIMIT}")
    redact = Redactor(req.token)
    if redact(body) != body:
        raise GitHubPostError(f"the {req.kind} report contains the GITHUB_TOKEN; not posting it")
    return talk_guarded(lambda: _talk(req, body, sleep), redact, f"{req.kind} issue to {req.repo}",
                        "nothing was changed on GitHub")


def _talk(req: IssueRequest, body: str, sleep) -> IssueOutcome:
    gh = connect(req.token, req.api_url, req.policy, req.timeout)
    repo = gh.get_repo(req.repo)
    login, note = authenticated_login(gh, req.author)
    notes = [note] if note else []
    # A guessed login may not be the issues' author: look through every bot's then.
    newest = _newest_ours(repo, req.kind, login, guessed=note is not None)
    if newest is not None and newest.state == "open":
        if newest.body == body:
            return IssueOutcome("unchanged", newest.number, newest.html_url, notes)
        call_with_retries(lambda _n: newest.edit(body=body), req.policy, sleep)
        return IssueOutcome("updated", newest.number, newest.html_url, notes)
    if req.findings is None:
        return IssueOutcome("none", notes=notes)
    if newest is not None and FINDINGS.format(req.findings) in (newest.body or ""):
        return IssueOutcome("kept-closed", newest.number, newest.html_url, notes)

    def create(attempt: int):
        if attempt > 1:  # the previous POST may have landed with its reply lost: look first
            found = _newest_ours(repo, req.kind, login, guessed=note is not None)
            if found is not None and found.state == "open" and found.body == body:
                return found
        return repo.create_issue(title=req.title, body=body)
    created = call_with_retries(create, req.policy, sleep)
    return IssueOutcome("created", created.number, created.html_url, notes)


def _newest_ours(repo, kind: str, login: str, guessed: bool):
    # A guessed login may not be the issues' author: look through every bot's then.
    listing = repo.get_issues(state="all") if guessed else repo.get_issues(state="all", creator=login)
    ours = [i for i in listing if is_ours(i, kind, login, any_bot=guessed)]
    return max(ours, key=lambda i: i.number, default=None)


def token_from_environment() -> str:
    # A trailing newline (a token read from a file) is a copy slip, not part of the token.
    return os.environ.get("GITHUB_TOKEN", "").strip()
