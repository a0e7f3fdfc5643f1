"""The commit-status state of a report, read from ``perfbot compare --format json`` output.

The compare document arrives from another job (an artifact), so it is validated against the
project's schema before anything in it is believed.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from bot import results_doc
from bot.github.errors import GitHubPostError

STATES = ("success", "failure", "error", "pending")


@dataclasses.dataclass(frozen=True)
class Verdict:
    state: str  # one of STATES
    description: str  # at most 140 characters, GitHub's limit for a status description
    head_sha: str | None = None  # the commit the results were measured on


def load_compare(path: Path) -> dict:
    try:
        return results_doc.load_compare(path)
    except results_doc.ResultsError as exc:
        raise GitHubPostError(str(exc)) from None


def _count(items: list, key: str, values: tuple[str, ...]) -> int:
    return sum(1 for item in items if item.get(key) in values)


def verdict_for(doc: dict, kind: str) -> Verdict:
    """Success or failure of ``kind`` according to a validated compare document."""
    head = doc["head"]["commit"] or None
    if kind == "accuracy":
        bad = _count(doc.get("accuracy") or [], "status", ("FAILED", "ERROR"))
        if bad:
            return Verdict("failure", f"{bad} model(s) not within tolerance", head)
        return Verdict("success", "every model meets tolerance", head)
    rows = doc["rows"]
    slower = _count(rows, "mark", ("regression",))
    broken = _count(rows, "mark", ("error",))
    if doc["verdict"] == "recommended":
        return Verdict("success", "recommended to merge", head)
    compile_slower = _count(rows, "compile_mark", ("regression",))
    bigger = _count(rows, "peak_mem_mark", ("regression",))
    detail = ", ".join(p for p in (f"{slower} slower" if slower else "",
                                    f"{broken} failed" if broken else "",
                                    f"{compile_slower} compile slower" if compile_slower else "",
                                    f"{bigger} use more memory" if bigger else "") if p)
    text = "not recommended to merge" + (f": {detail}" if detail else "")
    return Verdict("failure", text[:140], head)


def verdict_from_file(path: Path, kind: str) -> Verdict:
    return verdict_for(load_compare(path), kind)
