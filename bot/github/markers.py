"""The hidden marker that identifies perfbot's comment of each kind, and the stale-head note.

GitHub keeps an HTML comment in the stored body but does not render it, so the first line of our
comment can carry ``<!-- perfbot:KIND -->`` and later runs find (and edit) the same comment.
"""
from __future__ import annotations

KINDS = ("performance", "accuracy", "coverage")
ISSUE_KINDS = ("drift",)  # issues of the repository rather than comments on a pull request


def marker(kind: str) -> str:
    if kind not in KINDS + ISSUE_KINDS:
        raise ValueError(f"unknown report kind {kind!r}")
    return f"<!-- perfbot:{kind} -->"


def has_marker(body: str | None, kind: str) -> bool:
    """True when ``body`` *starts* with the marker of ``kind``.

    Only the start counts: a report may quote untrusted text (a model or file name) that contains
    some marker, and that must never make it look like a comment of another kind.
    """
    return (body or "").lstrip("\ufeff").startswith(marker(kind))


def with_marker(body: str, kind: str) -> str:
    """The body with its marker as the first line (added when the renderer did not put it)."""
    if has_marker(body, kind):
        return body
    return f"{marker(kind)}\n{body}"


def section(text: str, kind: str) -> str | None:
    """The ``kind`` part of a combined report (``perfbot report --format markdown`` writes every
    comment body in one file, each starting with its marker on a line of its own), or None.

    The renderer escapes ``<`` in data, so a marker line inside a rendered report is always ours.
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() in {marker(k) for k in KINDS}]
    for n, i in enumerate(starts):
        if lines[i].strip() == marker(kind):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            return "".join(lines[i:end]).rstrip("\n") + "\n"
    return None


def short_sha(sha: str) -> str:
    return sha[:7]


def same_commit(a: str, b: str) -> bool:
    """Full and abbreviated SHAs of one commit compare equal (results may carry either)."""
    a, b = a.strip().lower(), b.strip().lower()
    if not a or not b:
        return False
    return a.startswith(b) or b.startswith(a)


def stale_warning(results_sha: str, pr_head_sha: str) -> str:
    return (
        f"> :warning: These results are for commit {short_sha(results_sha)}, but the pull request's "
        f"head is now {short_sha(pr_head_sha)}; they will be replaced when the new run finishes."
    )


def with_stale_warning(body: str, kind: str, results_sha: str, pr_head_sha: str) -> str:
    """Put the stale-head warning right under the marker line, above the report."""
    body = with_marker(body, kind)
    first, _, rest = body.partition("\n")
    return f"{first}\n{stale_warning(results_sha, pr_head_sha)}\n\n{rest}"
