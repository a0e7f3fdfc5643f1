"""A PyGithub client for github.com or a GitHub Enterprise server, with our retry policy."""
from __future__ import annotations

from github import Auth, Github, GithubException

from bot.github.retry import RetryPolicy

DEFAULT_API_URL = "https://api.github.com"

# The REST API version our requests are written for. It is also what GitHub answers without the
# header, but pinning it keeps replies the same shape should that default move; servers that
# predate versioning ignore the header.
API_VERSION = "2022-11-28"

# The login GitHub Actions' GITHUB_TOKEN comments as; that token may not read ``/user``.
ACTIONS_BOT_LOGIN = "github-actions[bot]"


def connect(token: str, api_url: str | None = None, policy: RetryPolicy | None = None,
            timeout: float = 30.0) -> Github:
    policy = policy or RetryPolicy()
    return Github(
        auth=Auth.Token(token),
        base_url=(api_url or DEFAULT_API_URL).rstrip("/"),
        retry=policy.urllib3_retry(),
        timeout=int(max(1, timeout)),
        # GitHub's largest page: a busy pull request's comments in few requests (default 30).
        per_page=100,
        api_version=API_VERSION,
        seconds_between_writes=policy.pace or None,
        seconds_between_requests=(policy.pace / 4) or None,
    )


def authenticated_login(gh: Github, explicit: str | None = None) -> tuple[str, str | None]:
    """Whose comments are ours: ``explicit``, else the token's user, else the Actions bot.

    Returns the login and a note when we had to guess. An installation token (GitHub Actions,
    GitHub Apps) gets 403 on ``/user``; its comments are authored by the app's bot account.
    """
    if explicit:
        return explicit, None
    try:
        return gh.get_user().login, None
    except GithubException as exc:
        if exc.status in (401,):
            raise
        if exc.status in (403, 404):
            return ACTIONS_BOT_LOGIN, (
                f"the token cannot read its own user ({exc.status}); "
                f"treating marked comments by {ACTIONS_BOT_LOGIN} (else another bot account) as ours "
                f"(set --author to change)"
            )
        raise
