"""``post_report``: the whole posting stage for one report kind of one pull request."""
from __future__ import annotations

import dataclasses
import re
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import requests
from github import GithubException

from bot.github.client import authenticated_login, connect
from bot.github.comments import CommentOutcome, upsert_comment
from bot.github.describe import describe
from bot.github.errors import GitHubPostError, GitHubUnavailableError
from bot.github.markers import KINDS, marker, same_commit, section, with_marker, with_stale_warning
from bot.github.redact import Redactor, install_log_redaction, remove_log_redaction
from bot.github.retry import RetriesExhausted, RetryPolicy, is_transient
from bot.github.status import create_check_run, set_commit_status
from bot.github.verdict import STATES, Verdict, verdict_from_file
from reports.fit import COMMENT_LIMIT, cut_to_fit

T = TypeVar("T")


@dataclasses.dataclass
class PostRequest:
    repo: str  # OWNER/NAME
    pr: int
    kind: str  # one of markers.KINDS
    body_path: Path
    token: str
    api_url: str | None = None
    status: bool = False  # also set a commit status (and a check run where allowed)
    state_from: Path | None = None  # compare JSON giving the verdict and the results' head
    state: str | None = None  # explicit status state, overrides the compare verdict
    section: bool = False  # body_path is a combined report: post only the part of ``kind``
    head_sha: str | None = None  # the commit the results were measured on
    author: str | None = None  # whose comments are ours; default: the token's user
    target_url: str | None = None  # link of the status (e.g. the workflow run)
    full_report_url: str | None = None  # where the whole report is, for a body cut to fit
    status_note: str | None = None  # put before the status description (what the verdict rests on)
    policy: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)
    timeout: float = 30.0  # seconds to wait for each reply before counting the attempt as failed


@dataclasses.dataclass
class PostResult:
    comment: CommentOutcome
    pr_head_sha: str
    stale: bool
    status_state: str | None = None
    status_sha: str | None = None
    check_run_id: int | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


def _read_body(path: Path, kind: str, pick_section: bool) -> str:
    """The body to post, with its marker; maybe longer than one comment (see ``_fit_body``)."""
    try:
        body = Path(path).read_text("utf-8")
    except FileNotFoundError:
        raise GitHubPostError(f"report file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GitHubPostError(f"report file {path} is not readable UTF-8 text: {exc}") from None
    if not body.strip():
        raise GitHubPostError(f"report file {path} is empty; there is nothing to post")
    if pick_section:
        part = section(body, kind)
        if part is None:
            raise GitHubPostError(f"report file {path} holds no {kind} report (no {marker(kind)} line)")
        body = part
    return with_marker(body, kind)


def _fit_body(body: str, req: PostRequest, notes: list[str]) -> str:
    """A body over the shared comment limit is cut, with a pointer to the whole report, rather
    than refused: the comment still says what it can, and the other kinds' posts go on."""
    if len(body) <= COMMENT_LIMIT:
        return body
    where = (f"the whole report: {req.full_report_url}" if req.full_report_url
             else f"the whole report is {req.body_path.name} of this run")
    notes.append(f"the report has {len(body)} characters, more than the {COMMENT_LIMIT} a comment "
                 "may take; posted the part that fits")
    return cut_to_fit(body, where)


def _check(req: PostRequest) -> None:
    if req.kind not in KINDS:
        raise GitHubPostError(f"unknown report kind {req.kind!r}; expected one of {', '.join(KINDS)}")
    check_repo_and_token(req.repo, req.token, "comment on pull requests")
    if req.pr <= 0:
        raise GitHubPostError(f"--pr must be a positive pull request number, got {req.pr}")
    if req.state is not None and req.state not in STATES:
        raise GitHubPostError(f"--state must be one of {', '.join(STATES)}, got {req.state!r}")
    if req.head_sha is not None and not re.fullmatch(r"[0-9a-fA-F]{7,64}", req.head_sha):
        raise GitHubPostError(f"--head-sha must be a commit SHA (hex), got {req.head_sha!r}")
    if req.status and not (req.state or req.state_from):
        raise GitHubPostError("--status needs the verdict: pass --state-from COMPARE_JSON or --state STATE")
    if req.api_url is not None:
        check_api_url(req.api_url, req.token)
    if req.full_report_url is not None and not _is_http_url(req.full_report_url):
        raise GitHubPostError(f"--full-report must be an http(s) URL, got {req.full_report_url[:80]!r}")


def _is_http_url(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def check_repo_and_token(repo: str, token: str, may: str) -> None:
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise GitHubPostError(f"--repo must be OWNER/NAME, got {repo!r}")
    if not token:
        raise GitHubPostError(f"GITHUB_TOKEN is not set; it must hold a token that may {may}")
    if any(c.isspace() for c in token):
        # requests refuses such a header before sending; that would read as "GitHub unavailable"
        raise GitHubPostError("GITHUB_TOKEN has whitespace or a line break in it; set it to the token alone")


def check_api_url(url: str, token: str) -> None:
    """PyGithub meets a URL without http(s) and a host with an AttributeError or an assertion;
    the user gets the expected form instead (the URL shown without credentials or the token)."""
    if _is_http_url(url):
        return
    shown = Redactor(token)(url.rpartition("@")[2] if "@" in url else url)
    raise GitHubPostError(f"--api-url must be an http(s) URL such as https://ghe.example.com/api/v3, "
                          f"got {shown!r}")


def _verdict(req: PostRequest) -> Verdict | None:
    verdict = verdict_from_file(req.state_from, req.kind) if req.state_from else None
    if req.state:
        description = verdict.description if verdict and verdict.state == req.state else req.state
        verdict = Verdict(req.state, description, verdict.head_sha if verdict else None)
    if verdict and req.status_note:
        # First, so that the 140-character cut of a status description never drops it.
        verdict = dataclasses.replace(verdict, description=f"{req.status_note}: {verdict.description}")
    return verdict


def _head_sha(pull, req: PostRequest) -> str:
    """The pull request's head commit; a reply without one (a sign-in page answering 200 with
    HTML, say) did not come from the REST API."""
    head = pull.head
    if head is None or not isinstance(head.sha, str) or not head.sha:
        raise GitHubPostError(
            f"could not post the {req.kind} report to {req.repo}#{req.pr}: the server did not answer "
            f"like GitHub's REST API (no head commit in the pull request); is --api-url the API root, "
            f"e.g. https://HOST/api/v3 for GitHub Enterprise Server? the report is kept at {req.body_path}")
    return head.sha


def _talk_to_github(req: PostRequest, body: str, verdict: Verdict | None,
                    sleep: Callable[[float], None]) -> PostResult:
    gh = connect(req.token, req.api_url, req.policy, req.timeout)
    repo = gh.get_repo(req.repo)
    pull = repo.get_pull(req.pr)
    pr_head = _head_sha(pull, req)
    notes: list[str] = []
    body = _fit_body(body, req, notes)
    results_sha = req.head_sha or (verdict.head_sha if verdict else None)
    stale = bool(results_sha) and not same_commit(results_sha, pr_head)
    if stale:
        body = with_stale_warning(body, req.kind, results_sha, pr_head)
    login, note = authenticated_login(gh, req.author)
    if note:
        notes.append(note)
    outcome = upsert_comment(pull, req.kind, body, login, req.policy, sleep, login_is_guess=note is not None)
    result = PostResult(outcome, pr_head, stale, notes=notes)
    if req.status and verdict:
        _set_statuses(repo, req, verdict, body, results_sha, result, sleep)
    return result


def _set_statuses(repo, req: PostRequest, verdict: Verdict, body: str, results_sha: str | None,
                  result: PostResult, sleep: Callable[[float], None]) -> None:
    """Status and check run on the commit that was measured: the PR head, or the older commit the
    results are for when the PR has moved on (the new head has no verdict yet)."""
    sha = results_sha if result.stale else result.pr_head_sha
    if len(sha) < 40:  # the statuses API wants a full SHA, and guessing one would mislabel a commit
        result.notes.append(f"no status: the results name commit {sha} only by an abbreviated SHA")
        return
    set_commit_status(repo, sha, req.kind, verdict.state, verdict.description, req.target_url,
                      req.policy, sleep)
    run_id, note = create_check_run(repo, sha, req.kind, verdict.state, verdict.description, body,
                                    req.policy, sleep)
    result.status_state, result.status_sha, result.check_run_id = verdict.state, sha, run_id
    if note:
        result.notes.append(note)


def post_report(req: PostRequest, sleep: Callable[[float], None] = time.sleep) -> PostResult:
    """Create or update the ``req.kind`` comment on the pull request (and its status).

    Raises ``GitHubPostError`` (``GitHubUnavailableError`` when GitHub kept failing) with a
    redacted one-line message; the report file is only ever read, so it stays where it was.
    """
    _check(req)
    body = _read_body(req.body_path, req.kind, req.section)
    verdict = _verdict(req)
    redact = Redactor(req.token)
    if redact(body) != body:
        # A comment is public: a report that captured the token (a log, an env dump) stays local.
        raise GitHubPostError(f"report file {req.body_path} contains the GITHUB_TOKEN; not posting "
                              "it (remove the token from the report)")
    def talk() -> PostResult:
        result = _talk_to_github(req, body, verdict, sleep)
        # Notes may quote the server (a refused check run), which could echo the token.
        result.notes = [redact(note) for note in result.notes]
        return result
    return talk_guarded(talk, redact, f"{req.kind} report to {req.repo}#{req.pr}",
                        f"the report is kept at {req.body_path}")


def talk_guarded(talk: Callable[[], T], redact: Redactor, where: str, kept: str) -> T:
    """``talk()``, with any failure turned into one redacted line: ``GitHubUnavailableError`` when
    GitHub kept failing, else ``GitHubPostError``; ``kept`` says where the report stays."""
    log_filter = install_log_redaction(redact)
    # The error is raised after the ``except`` blocks, not inside them, so that it carries no
    # chained PyGithub exception whose text could hold the unredacted token.
    try:
        return talk()
    except GitHubPostError:
        raise
    except (RetriesExhausted, requests.RequestException) as exc:
        error = GitHubUnavailableError(f"could not post the {where}: GitHub is unavailable "
                                       f"({describe(exc)}); {kept}")
    except GithubException as exc:
        cls = GitHubUnavailableError if is_transient(exc) else GitHubPostError
        error = cls(f"could not post the {where}: GitHub answered {describe(exc)}; {kept}")
    except Exception as exc:  # anything else still gets one redacted line and keeps the report
        error = GitHubPostError(f"could not post the {where}: {describe(exc)}; {kept}")
    finally:
        remove_log_redaction(log_filter)
    error.args = (redact(error.args[0]),)
    raise error
