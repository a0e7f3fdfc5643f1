"""The WSGI application: routing, strict request checks, GitHub-shaped replies."""
from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from datetime import datetime, timezone
from http import HTTPStatus

DOCS = "https://docs.github.com/rest"
API_VERSIONS = {"2022-11-28", "2026-03-10"}
MEDIA_TYPES = ("*/*", "application/json", "application/vnd.github+json", "application/vnd.github.v3+json",
               "application/vnd.github.v3", "application/*")
BODY_LIMIT = 65536  # characters, GitHub's limit on an issue comment body


class Refusal(Exception):
    """An error reply: status, message, and GitHub's optional ``errors`` list and headers."""

    def __init__(self, status: int, message: str, errors: list | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.errors, self.headers = status, message, errors, headers or {}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class StrictGitHub:
    """One repository ``owner/name`` with pull requests, comments, statuses and check runs.

    ``prefix`` is ``"/api/v3"`` for an Enterprise-style root or ``""`` for github.com's.
    ``check_runs``: ``"allowed"``, ``"forbidden"`` (403 as for a token without checks access) or
    ``"absent"`` (404, an Enterprise server without the Checks API).
    ``before``: callables ``(method, path)`` run before each request is handled (to change the
    state between a client's list and its edit, say); ``after``: callables ``(method, path,
    status)`` run once it is handled, before the reply goes out (a slow reply, say).
    """

    def __init__(self, owner: str = "octo", name: str = "widgets", prefix: str = "/api/v3",
                 body_limit: int = BODY_LIMIT, check_runs: str = "allowed"):
        self.owner, self.name, self.prefix = owner, name, prefix
        self.body_limit, self.check_runs = body_limit, check_runs
        self.lock = threading.RLock()
        self.tokens: dict[str, tuple[str, bool]] = {}  # token -> (login, is installation token)
        self.pulls: dict[int, dict] = {}
        self.comments: dict[int, dict] = {}  # id -> stored comment (insertion order = id order)
        self.commits: set[str] = set()
        self.statuses: list[dict] = []
        self.runs: list[dict] = []
        self.log: list[tuple[str, str, dict]] = []  # (method, path below the prefix, headers)
        self.before: list[Callable[[str, str], None]] = []
        self.after: list[Callable[[str, str, int], None]] = []
        self._ids = itertools.count(2_000_000_001)  # real ids are large; clients must not assume small

    # -- state set up by tests ----------------------------------------------------------------
    def add_token(self, token: str, login: str, installation: bool = False) -> None:
        self.tokens[token] = (login, installation)

    def add_pull(self, number: int, head: str, base: str) -> None:
        self.pulls[number] = {"head": head, "base": base}
        self.commits.update({head, base})

    def add_comment(self, issue: int, body: str | None, login: str) -> dict:
        with self.lock:
            now = _now()
            c = {"id": next(self._ids), "issue": issue, "body": body, "login": login,
                 "created_at": now, "updated_at": now}
            self.comments[c["id"]] = c
            return c

    def comments_on(self, issue: int) -> list[dict]:
        with self.lock:
            return [c for c in self.comments.values() if c["issue"] == issue]

    # -- JSON shapes ------------------------------------------------------------------------------
    def _user(self, root: str, login: str | None) -> dict | None:
        if login is None:
            return None  # a deleted account: GitHub shows "ghost", the API says null
        bot = login.endswith("[bot]")
        uid = int(hashlib.sha256(login.encode()).hexdigest()[:8], 16)
        api = f"{root}{self.prefix}/users/{urllib.parse.quote(login)}"
        return {"login": login, "id": uid, "node_id": f"U_{uid:x}", "type": "Bot" if bot else "User",
                "site_admin": False, "avatar_url": f"{root}/avatars/u/{uid}", "gravatar_id": "",
                "url": api, "html_url": f"{root}/{login}" if not bot else f"{root}/apps/{login[:-5]}",
                "followers_url": f"{api}/followers", "repos_url": f"{api}/repos",
                "events_url": api + "/events{/privacy}", "received_events_url": f"{api}/received_events"}

    def _app(self, root: str, login: str | None) -> dict | None:
        if not (login or "").endswith("[bot]"):
            return None
        slug = login[:-5]
        return {"id": 15368, "slug": slug, "node_id": "MDM6QXBwMTUzNjg=", "name": slug,
                "owner": self._user(root, self.owner), "description": "", "external_url": root,
                "html_url": f"{root}/apps/{slug}", "created_at": "2019-05-01T00:00:00Z",
                "updated_at": "2019-05-01T00:00:00Z", "permissions": {"issues": "write"}, "events": []}

    def _repo_api(self, root: str) -> str:
        return f"{root}{self.prefix}/repos/{self.owner}/{self.name}"

    def _comment(self, root: str, c: dict) -> dict:
        api = self._repo_api(root)
        return {"id": c["id"], "node_id": f"IC_kwDO{c['id']:x}", "url": f"{api}/issues/comments/{c['id']}",
                "html_url": f"{root}/{self.owner}/{self.name}/pull/{c['issue']}#issuecomment-{c['id']}",
                "body": c["body"], "user": self._user(root, c["login"]),
                "created_at": c["created_at"], "updated_at": c["updated_at"],
                "issue_url": f"{api}/issues/{c['issue']}", "author_association": "CONTRIBUTOR",
                "performed_via_github_app": self._app(root, c["login"]),
                "reactions": {"url": f"{api}/issues/comments/{c['id']}/reactions", "total_count": 0,
                              "+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0,
                              "rocket": 0, "eyes": 0}}

    def _repo(self, root: str) -> dict:
        api = self._repo_api(root)
        return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": self.name,
                "full_name": f"{self.owner}/{self.name}", "owner": self._user(root, self.owner),
                "private": False, "html_url": f"{root}/{self.owner}/{self.name}", "description": None,
                "fork": False, "url": api, "default_branch": "main", "visibility": "public",
                "statuses_url": api + "/statuses/{sha}", "comments_url": api + "/comments{/number}",
                "issue_comment_url": api + "/issues/comments{/number}", "pulls_url": api + "/pulls{/number}",
                "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z",
                "pushed_at": "2011-01-26T19:06:43Z", "archived": False, "disabled": False}

    def _pull(self, root: str, number: int) -> dict:
        api, p = self._repo_api(root), self.pulls[number]
        side = lambda sha, ref: {"label": f"{self.owner}:{ref}", "ref": ref, "sha": sha,  # noqa: E731
                                 "user": self._user(root, self.owner), "repo": self._repo(root)}
        return {"url": f"{api}/pulls/{number}", "id": 1_000_000 + number, "node_id": f"PR_{number}",
                "html_url": f"{root}/{self.owner}/{self.name}/pull/{number}", "number": number,
                "issue_url": f"{api}/issues/{number}", "comments_url": f"{api}/issues/{number}/comments",
                "statuses_url": f"{api}/statuses/{p['head']}", "state": "open", "locked": False,
                "title": "A change", "body": None, "user": self._user(root, "contributor"),
                "created_at": "2026-01-01T00:00:00Z", "updated_at": _now(), "draft": False,
                "head": side(p["head"], "feature"), "base": side(p["base"], "main"),
                "merged": False, "mergeable": None, "author_association": "CONTRIBUTOR"}

    # -- WSGI -------------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if self.prefix and not path.startswith(self.prefix + "/"):
            # Outside the API root an Enterprise server is its web interface: HTML, not JSON.
            page = b"<!DOCTYPE html>\n<html><head><title>Page not found</title></head><body>404</body></html>\n"
            start_response("404 Not Found", [("Content-Type", "text/html; charset=utf-8"),
                                             ("Content-Length", str(len(page)))])
            return [page]
        try:
            status, payload, headers = self._handle(environ)
        except Refusal as r:
            error = {"message": r.message, "documentation_url": DOCS, "status": str(r.status)}
            if r.errors:
                error["errors"] = r.errors
            status, payload, headers = r.status, error, r.headers
        for hook in list(self.after):
            hook(environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")[len(self.prefix):], status)
        return self._reply(environ, start_response, status, payload, headers)

    def _reply(self, environ, start_response, status, payload, headers):
        reset = int(time.time()) + 3600
        out = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Used": "1",
               "X-RateLimit-Reset": str(reset), "X-RateLimit-Resource": "core",
               "X-GitHub-Api-Version-Selected": "2022-11-28", "X-GitHub-Request-Id": "0000:1111:2222",
               **headers}
        data = b""
        if status != 204 and status != 304:
            data = json.dumps(payload, indent=1).encode("utf-8")
            out["Content-Type"] = "application/json; charset=utf-8"
            if environ["REQUEST_METHOD"] == "GET" and status == 200:
                out["ETag"] = f'W/"{hashlib.sha256(data).hexdigest()}"'
                if environ.get("HTTP_IF_NONE_MATCH") == out["ETag"]:
                    status, data = 304, b""
                    del out["Content-Type"]
            if data and "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
                data = gzip.compress(data)
                out["Content-Encoding"] = "gzip"
                out["Vary"] = "Accept, Authorization, Accept-Encoding"
        out["Content-Length"] = str(len(data))
        start_response(f"{status} {HTTPStatus(status).phrase}", list(out.items()))
        return [data]

    def _root(self, environ) -> str:
        return f"{environ['wsgi.url_scheme']}://{environ['HTTP_HOST']}"

    def _check_request(self, environ, method: str) -> tuple[str, bool]:
        """Refuse what GitHub refuses before routing; returns the token's login and kind."""
        accept = environ.get("HTTP_ACCEPT", "*/*")
        if not any(t.split(";")[0].strip() in MEDIA_TYPES for t in accept.split(",")):
            raise Refusal(415, f"Unsupported 'Accept' header: {accept!r}")
        version = environ.get("HTTP_X_GITHUB_API_VERSION")
        if version is not None and version not in API_VERSIONS:
            raise Refusal(400, f"API version {version!r} is not supported.")
        scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() not in ("token", "bearer") or token not in self.tokens:
            raise Refusal(401, "Bad credentials")
        if method in ("POST", "PATCH") and "json" not in environ.get("CONTENT_TYPE", "json"):
            raise Refusal(415, "Content-Type must be application/json")
        return self.tokens[token]

    def _json_body(self, environ) -> dict:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise Refusal(400, "Problems parsing JSON") from None
        if not isinstance(body, dict):
            raise Refusal(400, "Problems parsing JSON")
        return body

    def _handle(self, environ) -> tuple[int, object, dict]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        path = path[len(self.prefix):]
        self.log.append((method, path, {k: v for k, v in environ.items() if k.startswith("HTTP_")}))
        for hook in list(self.before):
            hook(method, path)
        login, installation = self._check_request(environ, method)
        query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        body = self._json_body(environ) if method in ("POST", "PATCH") else {}
        root = self._root(environ)
        for pattern, methods in _ROUTES:
            m = re.fullmatch(pattern.format(repo=re.escape(f"/repos/{self.owner}/{self.name}")), path)
            if m and method in methods:
                with self.lock:
                    return methods[method](self, root, m, query, body, login, installation)
        raise Refusal(404, "Not Found")

    # -- endpoints --------------------------------------------------------------------------------
    def get_user(self, root, m, query, body, login, installation):
        if installation:
            raise Refusal(403, "Resource not accessible by integration")
        return 200, self._user(root, login), {}

    def get_repo(self, root, m, query, body, login, installation):
        return 200, self._repo(root), {}

    def get_pull(self, root, m, query, body, login, installation):
        number = int(m["n"])
        if number not in self.pulls:
            raise Refusal(404, "Not Found")
        return 200, self._pull(root, number), {}

    def list_comments(self, root, m, query, body, login, installation):
        number = int(m["n"])
        if number not in self.pulls:
            raise Refusal(404, "Not Found")
        try:
            per_page = min(100, max(1, int(query.get("per_page", 30))))
            page = max(1, int(query.get("page", 1)))
        except ValueError:
            raise Refusal(422, "Validation Failed") from None
        found = [c for c in self.comments_on(number) if c["updated_at"] >= query.get("since", "")]
        last = max(1, -(-len(found) // per_page))
        chunk = found[(page - 1) * per_page: page * per_page]
        url = f"{self._repo_api(root)}/issues/{number}/comments"
        keep = {k: v for k, v in query.items() if k not in ("page", "per_page")}
        rels = ([("prev", page - 1), ("first", 1)] if page > 1 else []) + \
               ([("next", page + 1), ("last", last)] if page < last else [])
        links = [f'<{url}?{urllib.parse.urlencode({**keep, "per_page": per_page, "page": p})}>; rel="{rel}"'
                 for rel, p in rels]
        return 200, [self._comment(root, c) for c in chunk], ({"Link": ", ".join(links)} if links else {})

    def _valid_body(self, body: dict) -> str:
        text = body.get("body")
        if not isinstance(text, str):
            raise Refusal(422, "Invalid request.\n\n\"body\" wasn't supplied.")
        if len(text) > self.body_limit:
            raise Refusal(422, "Validation Failed", [{
                "resource": "IssueComment", "code": "custom", "field": "body",
                "message": f"body is too long (maximum is {self.body_limit} characters)"}])
        return text

    def create_comment(self, root, m, query, body, login, installation):
        number = int(m["n"])
        if number not in self.pulls:
            raise Refusal(404, "Not Found")
        c = self.add_comment(number, self._valid_body(body), login)
        out = self._comment(root, c)
        return 201, out, {"Location": out["url"]}

    def _own_comment(self, m, login) -> dict:
        c = self.comments.get(int(m["id"]))
        if c is None:
            raise Refusal(404, "Not Found")
        if c["login"] != login:
            raise Refusal(403, "Must have admin rights to Repository.")
        return c

    def get_comment(self, root, m, query, body, login, installation):
        c = self.comments.get(int(m["id"]))
        if c is None:
            raise Refusal(404, "Not Found")
        return 200, self._comment(root, c), {}

    def edit_comment(self, root, m, query, body, login, installation):
        c = self._own_comment(m, login)
        c["body"], c["updated_at"] = self._valid_body(body), _now()
        return 200, self._comment(root, c), {}

    def delete_comment(self, root, m, query, body, login, installation):
        del self.comments[self._own_comment(m, login)["id"]]
        return 204, None, {}

    def _known_commit(self, ref: str) -> str:
        full = [sha for sha in self.commits if sha.startswith(ref.lower())]
        if len(ref) < 4 or len(full) != 1:
            raise Refusal(422, f"No commit found for SHA: {ref}")
        return full[0]

    def get_commit(self, root, m, query, body, login, installation):
        sha = self._known_commit(m["sha"])
        return 200, {"sha": sha, "node_id": f"C_{sha}", "url": f"{self._repo_api(root)}/commits/{sha}",
                     "html_url": f"{root}/{self.owner}/{self.name}/commit/{sha}",
                     "commit": {"message": "a change", "tree": {"sha": "0" * 40}},
                     "parents": [], "files": [], "stats": {"total": 0, "additions": 0, "deletions": 0}}, {}

    def create_status(self, root, m, query, body, login, installation):
        if len(m["sha"]) != 40:
            raise Refusal(422, f"No commit found for SHA: {m['sha']}")
        sha = self._known_commit(m["sha"])
        if body.get("state") not in ("error", "failure", "pending", "success"):
            raise Refusal(422, "Validation Failed", [{"resource": "Status", "code": "custom", "field": "state",
                                                      "message": "state is not included in the list"}])
        if len(body.get("description") or "") > 140:
            raise Refusal(422, "Validation Failed", [{"resource": "Status", "code": "custom",
                                                      "field": "description",
                                                      "message": "description is too long (maximum is 140 characters)"}])
        sid = next(self._ids)
        status = {"url": f"{self._repo_api(root)}/statuses/{sha}", "id": sid, "node_id": f"SC_{sid}",
                  "state": body["state"], "description": body.get("description"),
                  "target_url": body.get("target_url"), "context": body.get("context") or "default",
                  "created_at": _now(), "updated_at": _now(), "creator": self._user(root, login),
                  "avatar_url": None, "sha": sha}
        self.statuses.append(status)
        return 201, status, {}

    def create_check_run(self, root, m, query, body, login, installation):
        if self.check_runs == "absent":
            raise Refusal(404, "Not Found")
        if self.check_runs == "forbidden":
            raise Refusal(403, "Resource not accessible by integration")
        if not body.get("name") or not body.get("head_sha"):
            raise Refusal(422, "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.")
        self._known_commit(body["head_sha"])
        rid = next(self._ids)
        run = {"id": rid, "node_id": f"CR_{rid}", "head_sha": body["head_sha"], "external_id": "",
               "url": f"{self._repo_api(root)}/check-runs/{rid}", "details_url": None,
               "html_url": f"{root}/{self.owner}/{self.name}/runs/{rid}", "name": body["name"],
               "status": body.get("status", "queued"), "conclusion": body.get("conclusion"),
               "started_at": _now(), "completed_at": _now() if body.get("conclusion") else None,
               "output": {"title": None, "summary": None, "text": None, "annotations_count": 0,
                          **(body.get("output") or {})},
               "check_suite": {"id": 5}, "app": self._app(root, "perfbot[bot]"), "pull_requests": []}
        self.runs.append(run)
        return 201, run, {}


_ROUTES = (
    (r"/user", {"GET": StrictGitHub.get_user}),
    (r"{repo}", {"GET": StrictGitHub.get_repo}),
    (r"{repo}/pulls/(?P<n>\d+)", {"GET": StrictGitHub.get_pull}),
    (r"{repo}/issues/(?P<n>\d+)/comments", {"GET": StrictGitHub.list_comments,
                                             "POST": StrictGitHub.create_comment}),
    (r"{repo}/issues/comments/(?P<id>\d+)", {"GET": StrictGitHub.get_comment,
                                              "PATCH": StrictGitHub.edit_comment,
                                              "DELETE": StrictGitHub.delete_comment}),
    (r"{repo}/commits/(?P<sha>[0-9a-fA-F]+)", {"GET": StrictGitHub.get_commit}),
    (r"{repo}/statuses/(?P<sha>[0-9a-fA-F]+)", {"POST": StrictGitHub.create_status}),
    (r"{repo}/check-runs", {"POST": StrictGitHub.create_check_run}),
)
