"""GitHub-shaped JSON objects of the fake's data, with absolute URLs under the request's root."""
from __future__ import annotations

import hashlib
import urllib.parse

from .state import Comment, Issue, State, now


class Shapes:
    """``root`` is the scheme and host the client used; ``prefix`` the API's path below it."""

    def __init__(self, state: State, root: str, prefix: str):
        self.state, self.root, self.prefix = state, root, prefix
        self.repo_api = f"{root}{prefix}/repos/{state.owner}/{state.name}"
        self.repo_html = f"{root}/{state.owner}/{state.name}"

    def user(self, login: str | None) -> dict | None:
        if login is None:
            return None  # a deleted account: GitHub shows "ghost", the API says null
        bot = login.endswith("[bot]")
        uid = int(hashlib.sha256(login.encode()).hexdigest()[:8], 16)
        api = f"{self.root}{self.prefix}/users/{urllib.parse.quote(login)}"
        return {"login": login, "id": uid, "node_id": f"U_{uid:x}", "type": "Bot" if bot else "User",
                "site_admin": False, "avatar_url": f"{self.root}/avatars/u/{uid}", "gravatar_id": "",
                "url": api, "html_url": f"{self.root}/{login}" if not bot else f"{self.root}/apps/{login[:-5]}",
                "followers_url": f"{api}/followers", "repos_url": f"{api}/repos",
                "events_url": api + "/events{/privacy}", "received_events_url": f"{api}/received_events"}

    def app(self, login: str | None) -> dict | None:
        if not (login or "").endswith("[bot]"):
            return None
        slug = login[:-5]
        return {"id": 15368, "slug": slug, "node_id": "MDM6QXBwMTUzNjg=", "name": slug,
                "owner": self.user(self.state.owner), "description": "", "external_url": self.root,
                "html_url": f"{self.root}/apps/{slug}", "created_at": "2019-05-01T00:00:00Z",
                "updated_at": "2019-05-01T00:00:00Z", "permissions": {"issues": "write"}, "events": []}

    def comment(self, c: Comment) -> dict:
        api = self.repo_api
        return {"id": c.id, "node_id": f"IC_kwDO{c.id:x}", "url": f"{api}/issues/comments/{c.id}",
                "html_url": f"{self.repo_html}/pull/{c.issue}#issuecomment-{c.id}",
                "body": c.body, "user": self.user(c.login),
                "created_at": c.created_at, "updated_at": c.updated_at,
                "issue_url": f"{api}/issues/{c.issue}", "author_association": "CONTRIBUTOR",
                "performed_via_github_app": self.app(c.login),
                "reactions": {"url": f"{api}/issues/comments/{c.id}/reactions", "total_count": 0,
                              "+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0,
                              "rocket": 0, "eyes": 0}}

    def issue(self, i: Issue) -> dict:
        return {"id": 50_000 + i.number, "node_id": f"I_{i.number}", "number": i.number, "title": i.title,
                "body": i.body, "state": i.state, "user": self.user(i.login),
                "url": f"{self.repo_api}/issues/{i.number}", "html_url": f"{self.repo_html}/issues/{i.number}",
                "created_at": i.created_at, "updated_at": i.updated_at, "labels": [], "comments": 0}

    def repo(self) -> dict:
        api, st = self.repo_api, self.state
        return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": st.name,
                "full_name": f"{st.owner}/{st.name}", "owner": self.user(st.owner),
                "private": False, "html_url": self.repo_html, "description": None,
                "fork": False, "url": api, "default_branch": "main", "visibility": "public",
                "statuses_url": api + "/statuses/{sha}", "comments_url": api + "/comments{/number}",
                "issue_comment_url": api + "/issues/comments{/number}", "pulls_url": api + "/pulls{/number}",
                "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z",
                "pushed_at": "2011-01-26T19:06:43Z", "archived": False, "disabled": False}

    def pull(self, number: int) -> dict:
        api, p, owner = self.repo_api, self.state.pulls[number], self.state.owner
        side = lambda sha, ref: {"label": f"{owner}:{ref}", "ref": ref, "sha": sha,  # noqa: E731
                                 "user": self.user(owner), "repo": self.repo()}
        return {"url": f"{api}/pulls/{number}", "id": 1_000_000 + number, "node_id": f"PR_{number}",
                "html_url": f"{self.repo_html}/pull/{number}", "number": number,
                "issue_url": f"{api}/issues/{number}", "comments_url": f"{api}/issues/{number}/comments",
                "statuses_url": f"{api}/statuses/{p.head_sha}", "state": "open", "locked": False,
                "title": "A change", "body": None, "user": self.user("contributor"),
                "created_at": "2026-01-01T00:00:00Z", "updated_at": now(), "draft": False,
                "head": side(p.head_sha, p.head_ref), "base": side(p.base_sha, p.base_ref),
                "merged": False, "mergeable": None, "author_association": "CONTRIBUTOR"}

    def commit(self, sha: str) -> dict:
        return {"sha": sha, "node_id": f"C_{sha}", "url": f"{self.repo_api}/commits/{sha}",
                "html_url": f"{self.repo_html}/commit/{sha}",
                "commit": {"message": "a change", "tree": {"sha": "0" * 40}},
                "parents": [], "files": [], "stats": {"total": 0, "additions": 0, "deletions": 0}}

    def page_links(self, url: str, query: dict, page: int, per_page: int, last: int) -> dict:
        """GitHub's ``Link`` header of one page of a listing (none when it is the only page)."""
        keep = {k: v for k, v in query.items() if k not in ("page", "per_page")}
        rels = ([("prev", page - 1), ("first", 1)] if page > 1 else []) + \
               ([("next", page + 1), ("last", last)] if page < last else [])
        links = [f'<{url}?{urllib.parse.urlencode({**keep, "per_page": per_page, "page": p})}>; rel="{rel}"'
                 for rel, p in rels]
        return {"Link": ", ".join(links)} if links else {}
