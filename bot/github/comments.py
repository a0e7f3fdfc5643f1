"""The sticky comment: one comment per report kind per pull request, edited in place.

A comment is ours when it starts with the kind's marker *and* is authored by our login; anybody
can paste a marker into a comment, nobody else can author as us. Two jobs posting at once may both
find nothing and both create; ``settle`` then keeps the oldest of ours and deletes the rest, so
every racer converges on the same single comment.

When the token cannot say whose it is (an installation token gets 403 on ``/user``), the login is a
guess: GitHub Actions' token comments as ``github-actions[bot]`` but a GitHub App's as
``APP[bot]``. Then any bot account's marked comment is a candidate, and the author GitHub records
on the comment we edit or create settles the question for the clean-up.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from github import GithubException
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest

from bot.github.markers import has_marker, with_marker
from bot.github.retry import RetryPolicy, call_with_retries


@dataclasses.dataclass
class CommentOutcome:
    action: str  # "created", "updated" or "unchanged"
    comment_id: int
    url: str
    removed_duplicates: list[int] = dataclasses.field(default_factory=list)


def author(comment: IssueComment) -> str | None:
    user = comment.user  # null for a deleted account ("ghost")
    return (user.login or None) if user is not None else None


def is_ours(comment: IssueComment, kind: str, login: str, any_bot: bool = False) -> bool:
    if not has_marker(comment.body, kind):
        return False
    who = (author(comment) or "").lower()
    if who and who == login.lower():
        return True
    # App accounts' logins end in "[bot]", which no person's login can (brackets are not allowed).
    # Their ``type`` says "Bot" too, but reading it from a reply that lacks it makes PyGithub fetch
    # the user; the login alone decides without a request.
    return any_bot and who.endswith("[bot]")


def find_ours(pull: PullRequest, kind: str, login: str, any_bot: bool = False) -> list[IssueComment]:
    """Our comments of this kind, oldest first (comment ids grow with time); with ``any_bot``, the
    guessed ``login``'s before other bots'."""
    found = (c for c in pull.get_issue_comments() if is_ours(c, kind, login, any_bot))
    return sorted(found, key=lambda c: ((author(c) or "").lower() != login.lower(), c.id))


def _edit(comment: IssueComment, body: str, policy: RetryPolicy, sleep: Callable[[float], None]) -> None:
    # PATCH of the same body is idempotent, so retrying it blindly is safe.
    call_with_retries(lambda _attempt: comment.edit(body), policy, sleep)


def _edit_if_there(comment: IssueComment, body: str, policy: RetryPolicy,
                   sleep: Callable[[float], None], any_bot: bool) -> bool:
    """Edit ``comment``; False when it is gone (deleted by a person or a racing post after we
    listed it: 404) or, for a guessed login, turns out to be another bot's (403)."""
    try:
        _edit(comment, body, policy, sleep)
        return True
    except GithubException as exc:
        if exc.status == 404 or (any_bot and exc.status == 403):
            return False
        raise


def _create(pull: PullRequest, kind: str, body: str, login: str, policy: RetryPolicy,
            sleep: Callable[[float], None]) -> tuple[IssueComment, str]:
    def attempt(n: int) -> tuple[IssueComment, str]:
        if n > 1:
            # The previous POST may have landed with its reply lost: look before posting again.
            found = find_ours(pull, kind, login)
            if found:
                if found[0].body != body:
                    found[0].edit(body)
                return found[0], "created"
        return pull.create_issue_comment(body), "created"

    return call_with_retries(attempt, policy, sleep)


def _delete(comment: IssueComment) -> bool:
    try:
        comment.delete()
        return True
    except GithubException as exc:
        if exc.status == 404:  # the other racer deleted it first
            return False
        raise


def settle(pull: PullRequest, kind: str, body: str, login: str, mine: IssueComment,
           policy: RetryPolicy, sleep: Callable[[float], None],
           rounds: int = 3) -> tuple[IssueComment, list[int]]:
    """Leave exactly one comment of ours: the oldest, holding ``body``.

    The keeper is edited before the others are deleted: should it vanish after our listing (404),
    the others still exist and a fresh look picks the next oldest, as every racer would.
    """
    found = find_ours(pull, kind, login)
    if not found:
        return mine, []
    keeper = found[0]
    if keeper.id != mine.id and keeper.body != body:
        if not _edit_if_there(keeper, body, policy, sleep, False) and rounds > 1:
            return settle(pull, kind, body, login, mine, policy, sleep, rounds - 1)
    removed = [dup.id for dup in found[1:] if _delete(dup)]
    return keeper, removed


def upsert_comment(pull: PullRequest, kind: str, body: str, login: str,
                   policy: RetryPolicy | None = None,
                   sleep: Callable[[float], None] = time.sleep,
                   login_is_guess: bool = False) -> CommentOutcome:
    """Edit our ``kind`` comment on ``pull`` to ``body``, or create it; returns what was done.

    ``login_is_guess``: ``login`` was not confirmed by GitHub (see the module's docstring).
    """
    policy = policy or RetryPolicy()
    body = with_marker(body, kind)
    found = find_ours(pull, kind, login, login_is_guess)
    mine, action = (found[0], "updated") if found else (None, "created")
    if mine is not None and mine.body == body:
        action = "unchanged"
    elif mine is not None and not _edit_if_there(mine, body, policy, sleep, login_is_guess):
        mine = None
    if mine is None:
        mine, action = _create(pull, kind, body, login, policy, sleep)
    # The author GitHub recorded is who we are, whatever we guessed.
    login = author(mine) or login
    keeper, removed = settle(pull, kind, body, login, mine, policy, sleep)
    return CommentOutcome(action, keeper.id, keeper.html_url or keeper.url, removed)
