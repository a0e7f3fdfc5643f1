"""Failures the fake GitHub can answer with instead of (or after) doing a request's work."""
from __future__ import annotations

import dataclasses
import re
import time


@dataclasses.dataclass
class Fault:
    """Answer the next ``count`` requests matching ``method`` and ``path`` (a regex searched in the
    path below the API prefix) with ``status``; ``count=None`` means every such request."""

    method: str
    path: str
    status: int
    count: int | None = 1
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    message: str = "fault injected by the test server"
    after_work: bool = False  # do the request's work first, then lose the reply
    echo_auth: bool = False  # put the request's Authorization header in the message (a leaky proxy)
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.count is not None and self.hits >= self.count:
            return False
        return (self.method in ("*", method)) and re.search(self.path, path) is not None


def bad_gateway(method: str = "*", path: str = "", count: int | None = 1, after_work: bool = False) -> Fault:
    return Fault(method, path, 502, count, message="Bad Gateway", after_work=after_work)


def rate_limited(method: str = "*", path: str = "", count: int = 1, reset_in: int = 0) -> Fault:
    """A primary rate limit: 403, nothing remaining, resets ``reset_in`` seconds from now."""
    reset = str(int(time.time()) + reset_in)
    return Fault(method, path, 403, count,
                 headers={"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
                          "X-RateLimit-Reset": reset, "X-RateLimit-Used": "5000"},
                 message="API rate limit exceeded for user ID 1.")


def too_many_requests(method: str = "*", path: str = "", count: int = 1, retry_after: int = 0) -> Fault:
    return Fault(method, path, 429, count, headers={"Retry-After": str(retry_after)},
                 message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")


def forbidden(method: str = "*", path: str = "", count: int | None = None,
              message: str = "Resource not accessible by integration") -> Fault:
    return Fault(method, path, 403, count, message=message)


def leaky(method: str = "*", path: str = "", count: int | None = None, status: int = 500) -> Fault:
    """A broken proxy that echoes the request's credentials into its error reply."""
    return Fault(method, path, status, count, echo_auth=True, message="upstream failed for request with")
