"""The REST endpoints the fake GitHub answers: ``(method, path pattern) -> handler``.

Each handler takes the server, the reply's ``Shapes``, the path's match, the query, the JSON
body and the caller's login and token kind, and returns ``(status, payload, headers)`` or raises
``Refusal``. Checks GitHub makes that only the strict server makes are marked so.
"""
from __future__ import annotations

from .state import now


class Refusal(Exception):
    """An error reply: status, message, and GitHub's optional ``errors`` list and headers."""

    def __init__(self, status: int, message: str, errors: list | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.errors, self.headers = status, message, errors, headers or {}


def not_found() -> Refusal:
    return Refusal(404, "Not Found")


def get_user(gh, shapes, m, query, body, login, installation):
    if installation:
        raise Refusal(403, "Resource not accessible by integration")
    return 200, shapes.user(login), {}


def get_repo(gh, shapes, m, query, body, login, installation):
    return 200, shapes.repo(), {}


def get_pull(gh, shapes, m, query, body, login, installation):
    number = int(m["n"])
    if number not in gh.state.pulls:
        raise not_found()
    return 200, shapes.pull(number), {}


def _page(gh, query: dict) -> tuple[int, int]:
    """The page asked for and its size, within the server's default and largest page size."""
    try:
        per_page = min(gh.max_page_size, max(1, int(query.get("per_page", gh.page_size))))
        page = max(1, int(query.get("page", 1)))
    except ValueError:
        raise Refusal(422, "Validation Failed") from None
    return page, per_page


def _listing(gh, shapes, items: list, url: str, query: dict):
    page, per_page = _page(gh, query)
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page: page * per_page]
    return 200, chunk, shapes.page_links(url, query, page, per_page, last)


def list_comments(gh, shapes, m, query, body, login, installation):
    number = int(m["n"])
    if number not in gh.state.pulls:
        raise not_found()
    found = [c for c in gh.state.comments_on(number) if c.updated_at >= query.get("since", "")]
    return _listing(gh, shapes, [shapes.comment(c) for c in found],
                    f"{shapes.repo_api}/issues/{number}/comments", query)


def _valid_body(gh, body: dict) -> str:
    text = body.get("body")
    if not isinstance(text, str):
        raise Refusal(422, "Invalid request.\n\n\"body\" wasn't supplied.")
    if gh.body_limit is not None and len(text) > gh.body_limit:
        raise Refusal(422, "Validation Failed", [{
            "resource": "IssueComment", "code": "custom", "field": "body",
            "message": f"body is too long (maximum is {gh.body_limit} characters)"}])
    return text


def create_comment(gh, shapes, m, query, body, login, installation):
    number = int(m["n"])
    if number not in gh.state.pulls:
        raise not_found()
    out = shapes.comment(gh.state.add_comment(number, _valid_body(gh, body), login))
    return 201, out, {"Location": out["url"]}


def _comment(gh, m):
    c = gh.state.comments.get(int(m["id"]))
    if c is None:
        raise not_found()
    return c


def _own_comment(gh, m, login):
    c = _comment(gh, m)
    if c.login != login:
        raise Refusal(403, "Must have admin rights to Repository.")
    return c


def get_comment(gh, shapes, m, query, body, login, installation):
    return 200, shapes.comment(_comment(gh, m)), {}


def edit_comment(gh, shapes, m, query, body, login, installation):
    c = _own_comment(gh, m, login)
    return 200, shapes.comment(gh.state.edit_comment(c.id, _valid_body(gh, body))), {}


def delete_comment(gh, shapes, m, query, body, login, installation):
    gh.state.delete_comment(_own_comment(gh, m, login).id)
    return 204, None, {}


def list_issues(gh, shapes, m, query, body, login, installation):
    issues = [i for i in gh.state.issues.values()
              if query.get("state", "open") in ("all", i.state) and query.get("creator") in (None, i.login)]
    return _listing(gh, shapes, [shapes.issue(i) for i in sorted(issues, key=lambda i: -i.number)],
                    f"{shapes.repo_api}/issues", query)


def create_issue(gh, shapes, m, query, body, login, installation):
    if not isinstance(body.get("title"), str) or not body["title"]:
        raise Refusal(422, "Validation Failed")
    return 201, shapes.issue(gh.state.add_issue(body["title"], body.get("body") or "", login)), {}


def _issue(gh, m):
    if int(m["n"]) not in gh.state.issues:
        raise not_found()
    return int(m["n"])


def get_issue(gh, shapes, m, query, body, login, installation):
    return 200, shapes.issue(gh.state.issues[_issue(gh, m)]), {}


def edit_issue(gh, shapes, m, query, body, login, installation):
    return 200, shapes.issue(gh.state.edit_issue(_issue(gh, m), body)), {}


def _known_commit(gh, ref: str) -> str:
    """The full SHA of ``ref``; the strict server knows only its pull requests' commits."""
    if not gh.strict:
        return ref
    full = [sha for sha in gh.state.commits if sha.startswith(ref.lower())]
    if len(ref) < 4 or len(full) != 1:
        raise Refusal(422, f"No commit found for SHA: {ref}")
    return full[0]


def get_commit(gh, shapes, m, query, body, login, installation):
    return 200, shapes.commit(_known_commit(gh, m["sha"])), {}


def _status_errors(gh, body: dict) -> list[dict]:
    errors = []
    if body.get("state") not in ("error", "failure", "pending", "success"):
        errors.append({"resource": "Status", "code": "custom", "field": "state",
                       "message": "state is not included in the list"})
    elif gh.strict and len(body.get("description") or "") > 140:
        errors.append({"resource": "Status", "code": "custom", "field": "description",
                       "message": "description is too long (maximum is 140 characters)"})
    return errors


def create_status(gh, shapes, m, query, body, login, installation):
    if len(m["sha"]) != 40:
        raise Refusal(422, f"No commit found for SHA: {m['sha']}")
    sha = _known_commit(gh, m["sha"])
    if errors := _status_errors(gh, body):
        raise Refusal(422, "Validation Failed", errors)
    sid = gh.state.next_id()
    status = {"url": f"{shapes.repo_api}/statuses/{sha}", "id": sid, "node_id": f"SC_{sid}",
              "state": body["state"], "description": body.get("description"),
              "target_url": body.get("target_url"), "context": body.get("context") or "default",
              "created_at": now(), "updated_at": now(), "creator": shapes.user(login),
              "avatar_url": None, "sha": sha}
    gh.state.statuses.append(status)
    return 201, status, {}


def create_check_run(gh, shapes, m, query, body, login, installation):
    if gh.check_runs == "absent":
        raise not_found()
    if gh.check_runs == "forbidden":
        raise Refusal(403, "Resource not accessible by integration")
    if not body.get("name") or not body.get("head_sha"):
        raise Refusal(422, "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.")
    _known_commit(gh, body["head_sha"])
    rid = gh.state.next_id()
    run = {"id": rid, "node_id": f"CR_{rid}", "head_sha": body["head_sha"], "external_id": "",
           "url": f"{shapes.repo_api}/check-runs/{rid}", "details_url": None,
           "html_url": f"{shapes.repo_html}/runs/{rid}", "name": body["name"],
           "status": body.get("status", "queued"), "conclusion": body.get("conclusion"),
           "started_at": now(), "completed_at": now() if body.get("conclusion") else None,
           "output": {"title": None, "summary": None, "text": None, "annotations_count": 0,
                      **(body.get("output") or {})},
           "check_suite": {"id": 5}, "app": shapes.app("perfbot[bot]"), "pull_requests": []}
    gh.state.check_runs.append(run)
    return 201, run, {}


ROUTES = (
    (r"/user", {"GET": get_user}),
    (r"{repo}", {"GET": get_repo}),
    (r"{repo}/pulls/(?P<n>\d+)", {"GET": get_pull}),
    (r"{repo}/issues/(?P<n>\d+)/comments", {"GET": list_comments, "POST": create_comment}),
    (r"{repo}/issues/comments/(?P<id>\d+)", {"GET": get_comment, "PATCH": edit_comment,
                                              "DELETE": delete_comment}),
    (r"{repo}/issues", {"GET": list_issues, "POST": create_issue}),
    (r"{repo}/issues/(?P<n>\d+)", {"GET": get_issue, "PATCH": edit_issue}),
    (r"{repo}/commits/(?P<sha>[0-9a-fA-F]+)", {"GET": get_commit}),
    (r"{repo}/statuses/(?P<sha>[0-9a-fA-F]+)", {"POST": create_status}),
    (r"{repo}/check-runs", {"POST": create_check_run}),
)
