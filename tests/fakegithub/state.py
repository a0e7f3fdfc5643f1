"""The fake GitHub's data: users (by token), one repository, its commits, pull requests,
comments, issues, statuses and check runs."""
from __future__ import annotations

import dataclasses
import itertools
import threading
from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass
class Comment:
    id: int
    issue: int
    body: str | None
    login: str | None  # None: an account deleted since (the API says null)
    created_at: str
    updated_at: str


@dataclasses.dataclass
class PullRequest:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str = "feature"
    base_ref: str = "main"


@dataclasses.dataclass
class Issue:
    number: int
    title: str
    body: str
    login: str
    state: str
    created_at: str
    updated_at: str


class State:
    """Everything the server knows, behind one lock (the server answers on many threads)."""

    def __init__(self, owner: str, name: str, first_id: int = 1001):
        self.lock = threading.RLock()
        self.owner, self.name = owner, name
        self.users: dict[str, str] = {}  # token -> login
        self.app_tokens: set[str] = set()  # installation tokens: /user is 403 for them
        self.commits: set[str] = set()
        self.pulls: dict[int, PullRequest] = {}
        self.comments: dict[int, Comment] = {}  # insertion order = id order
        self.issues: dict[int, Issue] = {}  # numbered with the pull requests, as on GitHub
        self.statuses: list[dict] = []
        self.check_runs: list[dict] = []
        self._ids = itertools.count(first_id)

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def add_user(self, token: str, login: str, app: bool = False) -> None:
        self.users[token] = login
        if app:
            self.app_tokens.add(token)

    def add_pull(self, number: int, head_sha: str, base_sha: str) -> PullRequest:
        with self.lock:
            self.pulls[number] = PullRequest(number, head_sha, base_sha)
            self.commits.update({head_sha, base_sha})
            return self.pulls[number]

    def add_comment(self, issue: int, body: str | None, login: str | None) -> Comment:
        with self.lock:
            stamp = now()
            c = Comment(self.next_id(), issue, body, login, stamp, stamp)
            self.comments[c.id] = c
            return c

    def comments_on(self, issue: int) -> list[Comment]:
        with self.lock:
            return sorted((c for c in self.comments.values() if c.issue == issue), key=lambda c: c.id)

    def edit_comment(self, cid: int, body: str) -> Comment | None:
        with self.lock:
            c = self.comments.get(cid)
            if c:
                c.body, c.updated_at = body, now()
            return c

    def delete_comment(self, cid: int) -> bool:
        with self.lock:
            return self.comments.pop(cid, None) is not None

    def add_issue(self, title: str, body: str, login: str, state: str = "open") -> Issue:
        with self.lock:
            stamp = now()
            number = max([0, *self.pulls, *self.issues]) + 1
            self.issues[number] = Issue(number, title, body, login, state, stamp, stamp)
            return self.issues[number]

    def edit_issue(self, number: int, fields: dict) -> Issue | None:
        with self.lock:
            issue = self.issues.get(number)
            if issue:
                for key in ("title", "body", "state"):
                    if isinstance(fields.get(key), str):
                        setattr(issue, key, fields[key])
                issue.updated_at = now()
            return issue
