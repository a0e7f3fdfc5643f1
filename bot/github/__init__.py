"""GitHub integration: sticky pull-request comments, commit statuses and check runs (PyGithub).

Public API::

    post_report(PostRequest(...)) -> PostResult      # the whole `perfbot post` stage
    upsert_comment(pull, kind, body, login, policy)  # edit-or-create the marked comment
    set_commit_status(repo, sha, kind, state, description, target_url, policy)
    create_check_run(repo, sha, kind, state, description, body, policy)
    connect(token, api_url, policy) -> github.Github
    marker(kind), with_marker(body, kind), has_marker(body, kind)
    Redactor(*secrets)(text) -> text with the secrets masked
    verdict_from_file(compare_json, kind) -> Verdict
"""
from bot.github.client import ACTIONS_BOT_LOGIN, DEFAULT_API_URL, connect
from bot.github.comments import CommentOutcome, upsert_comment
from bot.github.errors import GitHubPostError, GitHubUnavailableError
from bot.github.markers import KINDS, has_marker, marker, with_marker
from bot.github.post import PostRequest, PostResult, post_report
from bot.github.redact import Redactor
from bot.github.retry import RetryPolicy
from bot.github.status import create_check_run, set_commit_status
from bot.github.verdict import Verdict, verdict_from_file

__all__ = [
    "ACTIONS_BOT_LOGIN", "DEFAULT_API_URL", "KINDS", "CommentOutcome", "GitHubPostError",
    "GitHubUnavailableError", "PostRequest", "PostResult", "Redactor", "RetryPolicy", "Verdict",
    "connect", "create_check_run", "has_marker", "marker", "post_report", "set_commit_status",
    "upsert_comment", "verdict_from_file", "with_marker",
]
