"""GitHub integration: sticky pull-request comments, commit statuses and check runs (PyGithub).

Public API::

    post_report(PostRequest(...)) -> PostResult      # the whole `perfbot post` stage
    upsert_comment(pull, kind, body, login, policy, sleep, login_is_guess=False)  # edit-or-create
    set_commit_status(repo, sha, kind, state, description, target_url, policy)
    create_check_run(repo, sha, kind, state, description, body, policy)
    connect(token, api_url, policy) -> github.Github
    marker(kind), with_marker(body, kind), has_marker(body, kind)
    Redactor(*secrets)(text) -> text with the secrets masked
    verdict_from_file(compare_json, kind) -> Verdict
"""
import importlib

# Where each public name lives. Loaded on first use (PEP 562) so that importing a light module of
# this package (``bot.github.markers`` from the CLI) does not pull in PyGithub.
_HOME = {
    "ACTIONS_BOT_LOGIN": "client", "DEFAULT_API_URL": "client", "connect": "client",
    "CommentOutcome": "comments", "upsert_comment": "comments",
    "GitHubPostError": "errors", "GitHubUnavailableError": "errors",
    "KINDS": "markers", "has_marker": "markers", "marker": "markers", "with_marker": "markers",
    "PostRequest": "post", "PostResult": "post", "post_report": "post",
    "Redactor": "redact", "RetryPolicy": "retry",
    "create_check_run": "status", "set_commit_status": "status",
    "Verdict": "verdict", "verdict_from_file": "verdict",
}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "ACTIONS_BOT_LOGIN", "DEFAULT_API_URL", "KINDS", "CommentOutcome", "GitHubPostError",
    "GitHubUnavailableError", "PostRequest", "PostResult", "Redactor", "RetryPolicy", "Verdict",
    "connect", "create_check_run", "has_marker", "marker", "post_report", "set_commit_status",
    "upsert_comment", "verdict_from_file", "with_marker",
]
