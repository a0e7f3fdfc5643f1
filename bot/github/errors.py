"""Errors of the GitHub posting stage.

They derive from ``UserError`` so that the CLI prints their one line and exits non-zero; their
messages are redacted before the exception is built, so printing one can never leak the token.
"""
from common.errors import UserError


class GitHubPostError(UserError):
    """Posting to GitHub failed (unreachable, refused, or the input to post is unusable)."""


class GitHubUnavailableError(GitHubPostError):
    """GitHub kept failing (5xx, rate limits, network) after every retry."""
