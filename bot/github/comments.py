"""The sticky comment: one comment per report kind per pull request, edited in place.

A comment is ours when it starts with the kind's marker *and* is authored by our login; anybody
can paste a marker into a comment, nobody else can author as us. Two jobs posting at once may both
find nothing and both create; ``settle`` then keeps the oldest of ours and deletes the rest, so
every racer converges on the same single comment.
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


def is_ours(comment: IssueComment, kind: str, login: str) -> bool:
    user = comment.user
    return (user is not None and (user.login or "").lower() == login.lower()
            and has_marker(comment.body, kind))


def find_ours(pull: PullRequest, kind: str, login: str) -> list[IssueComment]:
    """Our comments of this kind, oldest first (comment ids grow with time)."""
    return sorted((c for c in pull.get_issue_comments() if is_ours(c, kind, login)), key=lambda c: c.id)


def _edit(comment: IssueComment, body: str, policy: RetryPolicy, sleep: Callable[[float], None]) -> None:
    # PATCH of the same body is idempotent, so retrying it blindly is safe.
    call_with_retries(lambda _attempt: comment.edit(body), policy, sleep)


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
           policy: RetryPolicy, sleep: Callable[[float], None]) -> tuple[IssueComment, list[int]]:
    """Leave exactly one comment of ours: the oldest, holding ``body``."""
    found = find_ours(pull, kind, login)
    if not found:
        return mine, []
    keeper, removed = found[0], []
    for dup in found[1:]:
        if _delete(dup):
            removed.append(dup.id)
    if keeper.id != mine.id and keeper.body != body:
        _edit(keeper, body, policy, sleep)
    return keeper, removed


def upsert_comment(pull: PullRequest, kind: str, body: str, login: str,
                   policy: RetryPolicy | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> CommentOutcome:
    """Edit our ``kind`` comment on ``pull`` to ``body``, or create it; returns what was done."""
    policy = policy or RetryPolicy()
    body = with_marker(body, kind)
    found = find_ours(pull, kind, login)
    if found:
        mine = found[0]
        if mine.body == body:
            action = "unchanged"
        else:
            _edit(mine, body, policy, sleep)
            action = "updated"
    else:
        mine, action = _create(pull, kind, body, login, policy, sleep)
    keeper, removed = settle(pull, kind, body, login, mine, policy, sleep)
    return CommentOutcome(action, keeper.id, keeper.html_url or keeper.url, removed)
