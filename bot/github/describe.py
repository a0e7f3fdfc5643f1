"""One readable line for whatever went wrong while talking to GitHub."""
from __future__ import annotations

import re
import urllib.parse
from datetime import datetime, timezone

import requests
from github import GithubException, RateLimitExceededException

from bot.github.retry import RetriesExhausted


def _error_detail(error: object) -> str:
    """One entry of a 422 reply's ``errors``: a message, or GitHub's resource/field/code triple."""
    if isinstance(error, dict):
        if error.get("message"):
            return str(error["message"])
        return " ".join(str(error[k]) for k in ("resource", "field", "code") if error.get(k))
    return str(error)


def _github_message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and data.get("message"):
        # "Validation Failed" alone does not say what to fix; the errors list does.
        errors = data.get("errors") or []
        details = [d for d in map(_error_detail, errors if isinstance(errors, list) else [errors]) if d]
        return str(data["message"]) + (f": {'; '.join(details)}" if details else "")
    if isinstance(data, (str, bytes)) and data:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        return text[:200]
    return ""


def _content_type(exc: GithubException) -> str:
    headers = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
    return headers.get("content-type", "").split(";")[0].strip()


def _is_json(exc: GithubException) -> bool:
    kind = _content_type(exc)
    return not kind or "json" in kind


def _reset_time(exc: GithubException) -> str:
    """When to try again: the server's ``Retry-After`` (secondary limits), else the primary
    limit's reset time."""
    headers = {str(k).lower(): v for k, v in (exc.headers or {}).items()}
    retry_after = str(headers.get("retry-after", "")).strip()
    if retry_after.isdigit():
        return f" (retry after {retry_after} s)"
    reset = str(headers.get("x-ratelimit-reset", ""))
    if reset.isdigit():
        when = datetime.fromtimestamp(int(reset), timezone.utc).strftime("%H:%M:%S UTC")
        return f" (resets at {when})"
    return ""


def _network_reason(exc: BaseException) -> str:
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if found:
        return found.group(1).strip().lower()
    if isinstance(exc, requests.Timeout):
        return "timed out"
    return type(exc).__name__


def _refused_url(exc: BaseException) -> bool:
    """PyGithub's check that a URL a reply gave it (a ``Link`` header's next page, an object's
    ``url``) stays on the API's scheme, host, port and path fails with a bare assertion."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return isinstance(exc, AssertionError) and frame is not None \
        and frame.tb_frame.f_code.co_name.endswith("assertUrlAllowed")


def _host_of(exc: requests.RequestException) -> str:
    """`` at HOST`` for a request that failed on the way, so the user sees which server it was."""
    url = getattr(exc.request, "url", None) if exc.request is not None else None
    host = urllib.parse.urlsplit(url).hostname if isinstance(url, str) else None
    return f" at {host}" if host else ""


def describe(exc: BaseException) -> str:
    """A short description of ``exc`` without newlines (callers still redact it)."""
    attempts = ""
    if isinstance(exc, RetriesExhausted):
        attempts, exc = f" after {exc.attempts} attempts", exc.last
    if isinstance(exc, RateLimitExceededException):
        # GitHub's secondary limits (too many writes, too much at once) say so in their message.
        kind = "secondary " if "secondary" in _github_message(exc).lower() else ""
        text = f"HTTP {exc.status} {kind}rate limit exceeded{_reset_time(exc)}"
    elif isinstance(exc, GithubException) and not _is_json(exc):
        # Every REST API reply is JSON; anything else came from a web server or a proxy.
        text = (f"HTTP {exc.status} with a {_content_type(exc) or 'non-JSON'} page, not a REST API "
                f"reply (is --api-url the API root, e.g. https://HOST/api/v3 for GitHub Enterprise Server?)")
    elif isinstance(exc, GithubException):
        message = _github_message(exc)
        text = f"HTTP {exc.status}" + (f" {message}" if message else "")
    elif isinstance(exc, requests.RequestException):
        text = f"network error: {_network_reason(exc)}{_host_of(exc)}"
    elif isinstance(exc, RuntimeError) and "redirected" in str(exc):
        # PyGithub follows a redirect only within the same scheme and host, and says so in terms
        # of its own API; what the user can change is --api-url.
        text = str(exc).replace("via base_url: Github(base_url=...)", "with --api-url")
    elif _refused_url(exc):
        text = (f"the server's reply points to another host or address ({exc}), outside --api-url; "
                "not followed (is --api-url the address the server calls itself?)")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(f"{text}{attempts}".split())
