"""A fake of the part of GitHub's REST API that perfbot uses: a WSGI application served on
127.0.0.1 in a thread (real HTTP, PyGithub talks to it unmodified).

It serves under an Enterprise-style prefix (``/api/v3``, or ``""`` for github.com's root) so that
PyGithub's handling of ``base_url`` and of absolute URLs in replies and ``Link`` headers is
exercised for real. ``strict=True`` answers the way docs.github.com describes (default page size
30, at most 100, large ids, rate-limit headers, ETags, gzip when asked for, an HTML page outside
the API root) and refuses what GitHub refuses (bad Accept or API version, unknown commits,
over-long bodies and descriptions), so that code passing there depends on no quirk of the
lenient default, whose small pages (``page_size``) make paging cheap to test.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus

from .endpoints import ROUTES, Refusal, list_comments
from .faults import Fault
from .serve import serve
from .shapes import Shapes
from .state import State

PREFIX = "/api/v3"
DOCS = "https://docs.github.com/rest"
API_VERSIONS = {"2022-11-28", "2026-03-10"}
MEDIA_TYPES = ("*/*", "application/json", "application/vnd.github+json", "application/vnd.github.v3+json",
               "application/vnd.github.v3", "application/*")
BODY_LIMIT = 65536  # characters, GitHub's limit on an issue comment body


class FakeGitHub:
    """Start with ``with FakeGitHub() as gh:``; ``gh.api_url`` is the ``--api-url`` to give.

    ``check_runs``: ``"allowed"``, ``"forbidden"`` (403 as for a token without checks access) or
    ``"absent"`` (404, an Enterprise server without the Checks API).
    ``before``: callables ``(method, path)`` run before each request is handled (to change the
    state between a client's list and its edit, say); ``after``: callables ``(method, path,
    status)`` run once it is handled, before the reply goes out (a slow reply, say).
    """

    def __init__(self, owner: str = "octo", name: str = "widgets", *, strict: bool = False,
                 prefix: str = PREFIX, page_size: int | None = None, check_runs: str = "allowed"):
        self.strict, self.prefix, self.check_runs = strict, prefix, check_runs
        # Real ids are large: a strict server lets no client assume small ones.
        self.state = State(owner, name, first_id=2_000_000_001 if strict else 1001)
        # The lenient server's default page is also its largest, so small pages stay small.
        self.page_size = page_size or (30 if strict else 3)
        self.max_page_size = 100 if strict else self.page_size
        self.body_limit: int | None = BODY_LIMIT if strict else None
        self.faults: list[Fault] = []
        self.log: list[tuple[str, str, dict]] = []  # (method, path below the prefix, HTTP_ headers)
        self.before: list[Callable[[str, str], None]] = []
        self.after: list[Callable[[str, str, int], None]] = []
        self._list_barrier: threading.Barrier | None = None
        self._held_lists = 0
        self._serving: contextlib.ExitStack | None = None
        self.root = ""

    @classmethod
    def with_pull(cls, token: str, login: str, pr: int, head_sha: str, base_sha: str,
                  **kwargs) -> "FakeGitHub":
        """A server knowing one user (by token) and one open pull request."""
        gh = cls(**kwargs)
        gh.state.add_user(token, login)
        gh.state.add_pull(pr, head_sha, base_sha)
        return gh

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> "FakeGitHub":
        self._serving = contextlib.ExitStack()
        self.root = self._serving.enter_context(serve(self))
        return self

    def __exit__(self, *exc) -> None:
        self._serving.close()

    @property
    def api_url(self) -> str:
        return self.root + self.prefix

    # -- test controls ---------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        with self.state.lock:
            self.faults.extend(faults)

    def hold_first_lists(self, parties: int, timeout: float = 10.0) -> None:
        """Make the first ``parties`` comment listings wait for each other once taken, so racing
        posters all get the same (empty) list before any of them can create."""
        self._list_barrier = threading.Barrier(parties, timeout=timeout)
        self._held_lists = parties

    def wait_at_list_barrier(self) -> None:
        with self.state.lock:
            if self._held_lists <= 0 or self._list_barrier is None:
                return
            self._held_lists -= 1
            barrier = self._list_barrier
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # a racer never came: answer as usual

    @property
    def requests(self) -> list[tuple[str, str]]:
        """(method, path) in arrival order."""
        return [(method, path) for method, path, _ in self.log]

    @property
    def auth_headers(self) -> set[str]:
        return {headers.get("HTTP_AUTHORIZATION", "") for _, _, headers in self.log}

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for m, p in self.requests if m == method and re.search(pattern, p))

    # -- WSGI ------------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if path.startswith(self.prefix + "/"):
            path = path[len(self.prefix):]
        elif self.strict and self.prefix:
            return self._web_page_not_found(start_response)
        self.log.append((method, path, {k: v for k, v in environ.items() if k.startswith("HTTP_")}))
        try:
            status, payload, headers = self._handle(environ, method, path)
        except Refusal as r:
            error = {"message": r.message, "documentation_url": DOCS, "status": str(r.status)}
            if r.errors:
                error["errors"] = r.errors
            status, payload, headers = r.status, error, r.headers
        for hook in list(self.after):
            hook(method, path, status)
        return self._reply(environ, start_response, status, payload, headers)

    @staticmethod
    def _web_page_not_found(start_response):
        # Outside the API root an Enterprise server is its web interface: HTML, not JSON.
        page = b"<!DOCTYPE html>\n<html><head><title>Page not found</title></head><body>404</body></html>\n"
        start_response("404 Not Found", [("Content-Type", "text/html; charset=utf-8"),
                                         ("Content-Length", str(len(page)))])
        return [page]

    def _handle(self, environ, method: str, path: str) -> tuple[int, object, dict]:
        for hook in list(self.before):
            hook(method, path)
        fault = self._fault(method, path)
        if fault and not fault.after_work:
            raise self._fault_reply(fault, environ)
        login, installation = self._check_request(environ, method)
        query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        body = self._json_body(environ) if method in ("POST", "PATCH") else {}
        shapes = Shapes(self.state, f"{environ['wsgi.url_scheme']}://{environ['HTTP_HOST']}", self.prefix)
        repo = re.escape(f"/repos/{self.state.owner}/{self.state.name}")
        for pattern, methods in ROUTES:
            m = re.fullmatch(pattern.format(repo=repo), path)
            if m and method in methods:
                with self.state.lock:
                    reply = methods[method](self, shapes, m, query, body, login, installation)
                if methods[method] is list_comments and query.get("page", "1") == "1":
                    # Held after the list is taken (and the lock let go): waiting before it would
                    # let a racer released first create its comment before a slower server thread
                    # has read the list.
                    self.wait_at_list_barrier()
                if fault:  # the work is done, the reply is lost on the way back
                    raise self._fault_reply(fault, environ)
                return reply
        raise Refusal(404, "Not Found")

    def _fault(self, method: str, path: str) -> Fault | None:
        with self.state.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    @staticmethod
    def _fault_reply(fault: Fault, environ) -> Refusal:
        message = fault.message
        if fault.echo_auth:
            message = f"{message} Authorization: {environ.get('HTTP_AUTHORIZATION')}"
        return Refusal(fault.status, message, headers=fault.headers)

    def _check_request(self, environ, method: str) -> tuple[str, bool]:
        """Refuse what GitHub refuses before routing; returns the token's login and kind."""
        if self.strict:
            accept = environ.get("HTTP_ACCEPT", "*/*")
            if not any(t.split(";")[0].strip() in MEDIA_TYPES for t in accept.split(",")):
                raise Refusal(415, f"Unsupported 'Accept' header: {accept!r}")
            version = environ.get("HTTP_X_GITHUB_API_VERSION")
            if version is not None and version not in API_VERSIONS:
                raise Refusal(400, f"API version {version!r} is not supported.")
        scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if token not in self.state.users or (self.strict and scheme.lower() not in ("token", "bearer")):
            raise Refusal(401, "Bad credentials")
        if self.strict and method in ("POST", "PATCH") and "json" not in environ.get("CONTENT_TYPE", "json"):
            raise Refusal(415, "Content-Type must be application/json")
        return self.state.users[token], token in self.state.app_tokens

    @staticmethod
    def _json_body(environ) -> dict:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise Refusal(400, "Problems parsing JSON") from None
        if not isinstance(body, dict):
            raise Refusal(400, "Problems parsing JSON")
        return body

    def _reply(self, environ, start_response, status, payload, headers):
        out = dict(headers)
        if self.strict:
            out = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Used": "1",
                   "X-RateLimit-Reset": str(int(time.time()) + 3600), "X-RateLimit-Resource": "core",
                   "X-GitHub-Api-Version-Selected": "2022-11-28", "X-GitHub-Request-Id": "0000:1111:2222",
                   **headers}
        data = b""
        if status not in (204, 304):
            data = json.dumps(payload, indent=1).encode("utf-8")
            out["Content-Type"] = "application/json; charset=utf-8"
            if self.strict:
                status, data = self._conditional_and_compressed(environ, status, data, out)
        out["Content-Length"] = str(len(data))
        start_response(f"{status} {HTTPStatus(status).phrase}", list(out.items()))
        return [data]

    @staticmethod
    def _conditional_and_compressed(environ, status: int, data: bytes, out: dict) -> tuple[int, bytes]:
        """GitHub's ETag (a 304 for a matching If-None-Match) and gzip when the client accepts it."""
        if environ["REQUEST_METHOD"] == "GET" and status == 200:
            out["ETag"] = f'W/"{hashlib.sha256(data).hexdigest()}"'
            if environ.get("HTTP_IF_NONE_MATCH") == out["ETag"]:
                del out["Content-Type"]
                return 304, b""
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            out["Content-Encoding"] = "gzip"
            out["Vary"] = "Accept, Authorization, Accept-Encoding"
            return status, gzip.compress(data)
        return status, data
