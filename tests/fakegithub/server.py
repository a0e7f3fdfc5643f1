"""A threaded HTTP server speaking the part of GitHub's REST API that ``perfbot post`` uses.

It serves under an Enterprise-style prefix (``/api/v3``) so that PyGithub's handling of
``base_url`` and of absolute URLs in replies and ``Link`` headers is exercised for real.
"""
from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .faults import Fault
from .state import State

PREFIX = "/api/v3"


class FakeGitHub:
    """Start with ``with FakeGitHub() as gh:``; ``gh.api_url`` is the ``--api-url`` to give."""

    def __init__(self, owner: str = "octo", name: str = "widgets", page_size: int = 3):
        self.state = State(owner, name)
        self.page_size = page_size
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []  # (method, path) in arrival order
        self.auth_headers: set[str] = set()
        self.check_runs_allowed = True
        self._list_barrier: threading.Barrier | None = None
        self._held_lists = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

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
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.root + PREFIX

    # -- test controls ---------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        with self.state.lock:
            self.faults.extend(faults)

    def hold_first_lists(self, parties: int, timeout: float = 10.0) -> None:
        """Make the first ``parties`` comment listings wait for each other once taken, so racing
        posters all get the same (empty) list before any of them can create."""
        self._list_barrier = threading.Barrier(parties, timeout=timeout)
        self._held_lists = parties

    def _wait_at_list_barrier(self) -> None:
        with self.state.lock:
            if self._held_lists <= 0 or self._list_barrier is None:
                return
            self._held_lists -= 1
            barrier = self._list_barrier
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # a racer never came: answer as usual

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for m, p in self.requests if m == method and re.search(pattern, p))

    # -- JSON shapes -----------------------------------------------------------------------------
    def repo_url(self) -> str:
        return f"{self.api_url}/repos/{self.state.owner}/{self.state.name}"

    def user_json(self, login: str) -> dict:
        bot = login.endswith("[bot]")
        return {"login": login, "id": abs(hash(login)) % 10**6, "type": "Bot" if bot else "User",
                "url": f"{self.api_url}/users/{urllib.parse.quote(login)}"}

    def comment_json(self, c) -> dict:
        return {
            "id": c.id, "node_id": f"IC_{c.id}", "body": c.body, "user": self.user_json(c.login),
            "url": f"{self.repo_url()}/issues/comments/{c.id}",
            "html_url": f"{self.root}/{self.state.owner}/{self.state.name}/pull/{c.issue}#issuecomment-{c.id}",
            "issue_url": f"{self.repo_url()}/issues/{c.issue}",
            "created_at": c.created_at, "updated_at": c.updated_at, "author_association": "NONE",
        }

    def issue_json(self, i) -> dict:
        return {
            "id": 50_000 + i.number, "node_id": f"I_{i.number}", "number": i.number, "title": i.title,
            "body": i.body, "state": i.state, "user": self.user_json(i.login),
            "url": f"{self.repo_url()}/issues/{i.number}",
            "html_url": f"{self.root}/{self.state.owner}/{self.state.name}/issues/{i.number}",
            "created_at": i.created_at, "updated_at": i.updated_at, "labels": [], "comments": 0,
        }


def _handler_for(gh: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

        def do_PATCH(self):
            self._serve("PATCH")

        def do_DELETE(self):
            self._serve("DELETE")

        # -- plumbing ----------------------------------------------------------------------------
        def _send(self, status: int, payload=None, headers: dict | None = None) -> None:
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, headers: dict | None = None) -> None:
            self._send(status, {"message": message, "documentation_url": "https://docs.github.com/rest"}, headers)

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            return json.loads(raw) if raw else {}

        def _fault(self, method: str, path: str) -> Fault | None:
            with gh.state.lock:
                for fault in gh.faults:
                    if fault.matches(method, path):
                        fault.hits += 1
                        return fault
            return None

        def _answer_fault(self, fault: Fault) -> None:
            message = fault.message
            if fault.echo_auth:
                message = f"{message} Authorization: {self.headers.get('Authorization')}"
            self._error(fault.status, message, fault.headers)

        def _serve(self, method: str) -> None:
            url = urllib.parse.urlsplit(self.path)
            path = url.path[len(PREFIX):] if url.path.startswith(PREFIX) else url.path
            query = dict(urllib.parse.parse_qsl(url.query))
            gh.requests.append((method, path))
            auth = self.headers.get("Authorization", "")
            gh.auth_headers.add(auth)
            body = self._body() if method in ("POST", "PATCH") else {}
            fault = self._fault(method, path)
            if fault and not fault.after_work:
                return self._answer_fault(fault)
            token = auth.split(" ", 1)[1] if " " in auth else ""
            login = gh.state.users.get(token)
            if login is None:
                return self._error(401, "Bad credentials")
            status, payload, headers = _route(gh, method, path, query, body, token, login, self)
            if fault:  # the work is done, the reply is lost on the way back
                return self._answer_fault(fault)
            self._send(status, payload, headers)

    return Handler


def _route(gh: FakeGitHub, method: str, path: str, query: dict, body: dict, token: str, login: str,
           handler) -> tuple[int, object, dict]:
    st = gh.state
    base = f"/repos/{st.owner}/{st.name}"
    not_found = (404, {"message": "Not Found"}, {})
    if method == "GET" and path == "/user":
        if token in st.app_tokens:
            return 403, {"message": "Resource not accessible by integration"}, {}
        return 200, gh.user_json(login), {}
    if not (path == base or path.startswith(base + "/")):
        return not_found
    rest = path[len(base):]
    if method == "GET" and rest == "":
        return 200, {"id": 1, "name": st.name, "full_name": f"{st.owner}/{st.name}",
                     "owner": gh.user_json(st.owner), "url": gh.repo_url(), "private": False,
                     "default_branch": "main", "html_url": f"{gh.root}/{st.owner}/{st.name}"}, {}
    m = re.fullmatch(r"/pulls/(\d+)", rest)
    if method == "GET" and m:
        pull = st.pulls.get(int(m.group(1)))
        if not pull:
            return not_found
        n = pull.number
        return 200, {"number": n, "state": "open", "title": "a change",
                     "url": f"{gh.repo_url()}/pulls/{n}", "issue_url": f"{gh.repo_url()}/issues/{n}",
                     "html_url": f"{gh.root}/{st.owner}/{st.name}/pull/{n}",
                     "head": {"sha": pull.head_sha, "ref": pull.head_ref, "label": f"{st.owner}:{pull.head_ref}"},
                     "base": {"sha": pull.base_sha, "ref": pull.base_ref, "label": f"{st.owner}:{pull.base_ref}"}}, {}
    m = re.fullmatch(r"/issues/(\d+)/comments", rest)
    if m and method == "GET":
        return _list_comments(gh, int(m.group(1)), query)
    if m and method == "POST":
        if int(m.group(1)) not in st.pulls:
            return not_found
        if not isinstance(body.get("body"), str):
            return 422, {"message": "Validation Failed"}, {}
        return 201, gh.comment_json(st.add_comment(int(m.group(1)), body["body"], login)), {}
    m = re.fullmatch(r"/issues/comments/(\d+)", rest)
    if m:
        cid = int(m.group(1))
        c = st.comments.get(cid)
        if c is None:
            return not_found
        if method in ("PATCH", "DELETE") and c.login != login:
            return 403, {"message": "You cannot edit comments of other users"}, {}
        if method == "PATCH":
            return 200, gh.comment_json(st.edit_comment(cid, body.get("body", ""))), {}
        if method == "DELETE":
            st.delete_comment(cid)
            return 204, None, {}
        if method == "GET":
            return 200, gh.comment_json(c), {}
    if rest == "/issues" and method == "GET":
        issues = [i for i in st.issues.values()
                  if query.get("state", "open") in ("all", i.state)
                  and query.get("creator") in (None, i.login)]
        return _page(gh, [gh.issue_json(i) for i in sorted(issues, key=lambda i: -i.number)],
                     f"{gh.repo_url()}/issues", query)
    if rest == "/issues" and method == "POST":
        if not isinstance(body.get("title"), str) or not body["title"]:
            return 422, {"message": "Validation Failed"}, {}
        return 201, gh.issue_json(st.add_issue(body["title"], body.get("body") or "", login)), {}
    m = re.fullmatch(r"/issues/(\d+)", rest)
    if m and int(m.group(1)) in st.issues:
        if method == "PATCH":
            return 200, gh.issue_json(st.edit_issue(int(m.group(1)), body)), {}
        if method == "GET":
            return 200, gh.issue_json(st.issues[int(m.group(1))]), {}
    m = re.fullmatch(r"/commits/([0-9a-f]{7,40})", rest)
    if method == "GET" and m:
        return 200, {"sha": m.group(1), "url": f"{gh.repo_url()}/commits/{m.group(1)}"}, {}
    m = re.fullmatch(r"/statuses/([0-9a-f]{40})", rest)
    if method == "POST" and m:
        if body.get("state") not in ("success", "failure", "error", "pending"):
            return 422, {"message": "Validation Failed"}, {}
        status = {"id": st.next_id(), "sha": m.group(1), "state": body["state"],
                  "context": body.get("context", "default"), "description": body.get("description"),
                  "target_url": body.get("target_url"), "creator": gh.user_json(login)}
        with st.lock:
            st.statuses.append(status)
        return 201, {**status, "url": f"{gh.repo_url()}/statuses/{m.group(1)}"}, {}
    if method == "POST" and rest == "/check-runs":
        if not gh.check_runs_allowed:
            return 403, {"message": "You must authenticate via a GitHub App."}, {}
        run = {"id": st.next_id(), "name": body.get("name"), "head_sha": body.get("head_sha"),
               "status": body.get("status"), "conclusion": body.get("conclusion"),
               "output": body.get("output")}
        with st.lock:
            st.check_runs.append(run)
        return 201, {**run, "url": f"{gh.repo_url()}/check-runs/{run['id']}"}, {}
    return not_found


def _list_comments(gh: FakeGitHub, issue: int, query: dict) -> tuple[int, object, dict]:
    if issue not in gh.state.pulls:
        return 404, {"message": "Not Found"}, {}
    reply = _page(gh, [gh.comment_json(c) for c in gh.state.comments_on(issue)],
                  f"{gh.repo_url()}/issues/{issue}/comments", query)
    if int(query.get("page", 1)) == 1:
        # Held after the list is taken: waiting before it would let a racer that was released
        # first create its comment before a slower server thread has read the list.
        gh._wait_at_list_barrier()
    return reply


def _page(gh: FakeGitHub, items: list, base: str, query: dict) -> tuple[int, object, dict]:
    """One page of ``items`` with GitHub's ``Link`` header."""
    page = int(query.get("page", 1))
    # ``page_size`` is this server's default and its largest page (GitHub's are 30 and 100), so
    # small pages stay small even when the client asks for more.
    per_page = min(int(query.get("per_page", gh.page_size)), gh.page_size)
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page: page * per_page]
    extra = "".join(f"&{k}={urllib.parse.quote(v)}" for k, v in sorted(query.items())
                    if k not in ("page", "per_page"))
    links = []
    if page < last:
        links.append(f'<{base}?per_page={per_page}&page={page + 1}{extra}>; rel="next"')
        links.append(f'<{base}?per_page={per_page}&page={last}{extra}>; rel="last"')
    if page > 1:
        links.append(f'<{base}?per_page={per_page}&page=1{extra}>; rel="first"')
        links.append(f'<{base}?per_page={per_page}&page={page - 1}{extra}>; rel="prev"')
    headers = {"Link": ", ".join(links)} if links else {}
    return 200, chunk, headers
