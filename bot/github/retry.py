"""Retries: PyGithub's ``GithubRetry`` for what it handles, and our own loop for what it does not.

``GithubRetry`` (a urllib3 ``Retry``) retries idempotent requests on 5xx, 429 and rate-limit 403s,
honouring ``Retry-After`` and ``X-RateLimit-Reset``. It must not retry POST/PATCH blindly: a create
whose reply was lost would be made twice. Those two go through ``call_with_retries`` here, whose
callers check the comment list before trying again.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TypeVar

import requests
from github import GithubException, GithubRetry, RateLimitExceededException
from urllib3 import Retry
from urllib3.exceptions import InvalidHeader, MaxRetryError, ResponseError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. ``backoff`` doubles per attempt up to ``max_backoff``; a rate limit or a
    ``Retry-After`` may ask for longer, up to ``max_wait``, beyond which we give up at once."""

    attempts: int = 5
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_wait: float = 300.0
    # PyGithub spaces writes (1 s) and requests (0.25 s) to stay clear of GitHub's secondary rate
    # limits; ``pace`` is the write spacing, requests get a quarter of it.
    pace: float = 1.0

    def delay(self, attempt: int) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        return min(self.backoff * (2 ** (attempt - 1)), self.max_backoff)

    def urllib3_retry(self) -> GithubRetry:
        return BoundedRetry(
            total=self.attempts - 1,
            backoff_factor=self.backoff,
            backoff_max=self.max_backoff,
            # 429 is how GitHub's secondary limits and many proxies answer; 5xx and 403 are added
            # by GithubRetry itself (403 only when it really is a rate limit).
            status_forcelist=[429, *range(500, 600)],
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET"},
            secondary_rate_wait=min(60.0, self.max_wait),
            max_rate_limit_wait=self.max_wait,
            # With retries left unused, urllib3 hands the last reply to PyGithub, which turns it
            # into a GithubException carrying the status: more useful than urllib3's RetryError.
            raise_on_status=False,
        )


class BoundedRetry(GithubRetry):
    """GithubRetry whose wait for a ``Retry-After`` is bounded by ``max_rate_limit_wait``.

    urllib3 sleeps for whatever ``Retry-After`` says (an hour, a day); a reply asking for longer
    than we may wait is handed on as it is, so the user gets GitHub's answer at once.
    """

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if response is not None and self.max_rate_limit_wait is not None:
            try:
                wait = self.get_retry_after(response)
            except InvalidHeader:
                wait = None
            if wait is not None and wait > self.max_rate_limit_wait:
                # With raise_on_status=False urllib3 returns this response instead of raising.
                raise MaxRetryError(_pool, url, ResponseError(f"Retry-After {wait:.0f}s is too long"))
        return super().increment(method, url, response, error, _pool, _stacktrace)


def is_transient(exc: BaseException) -> bool:
    """Worth another try: network trouble, 5xx, 429, rate-limit 403."""
    if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
        return True
    if isinstance(exc, GithubException):
        if isinstance(exc, RateLimitExceededException):
            return True
        if exc.status in (403, 429) and _asks_to_wait(exc):
            return True
        return exc.status in (429,) or (exc.status or 0) >= 500
    return False


def _asks_to_wait(exc: GithubException) -> bool:
    """GitHub's documented rate-limit signals, whatever the message says: a ``Retry-After``, or
    no requests remaining in the window (PyGithub only recognises GitHub's exact wording)."""
    lower = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
    return "retry-after" in lower or lower.get("x-ratelimit-remaining") == "0"


def requested_wait(exc: BaseException) -> float | None:
    """The wait the server asked for (``Retry-After`` or until ``X-RateLimit-Reset``), if any."""
    headers = getattr(exc, "headers", None) or {}
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    if lower.get("retry-after", "").strip().isdigit():
        return float(lower["retry-after"])
    if lower.get("x-ratelimit-remaining") == "0" and lower.get("x-ratelimit-reset", "").isdigit():
        return max(0.0, float(lower["x-ratelimit-reset"]) - time.time()) + 1.0
    return None


class RetriesExhausted(Exception):
    """Every attempt failed with a transient error; ``last`` is the final one."""

    def __init__(self, attempts: int, last: BaseException):
        super().__init__(f"{attempts} attempts")
        self.attempts, self.last = attempts, last


def call_with_retries(
    fn: Callable[[int], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn(attempt)`` until it succeeds, retrying transient failures with backoff.

    ``fn`` gets the 1-based attempt number so that a retry can first look for the effect of an
    attempt whose reply was lost. Permanent errors propagate at once.
    """
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn(attempt)
        except Exception as exc:
            if not is_transient(exc):
                raise
            if attempt == policy.attempts:
                raise RetriesExhausted(attempt, exc) from exc
            wait = max(policy.delay(attempt), requested_wait(exc) or 0.0)
            if wait > policy.max_wait:
                raise RetriesExhausted(attempt, exc) from exc
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
