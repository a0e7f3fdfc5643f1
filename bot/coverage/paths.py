"""Turning the paths a coverage tool wrote into paths relative to the repository root.

Tools disagree: coverage.py's XML names files relative to a ``<source>`` directory, gcovr relative
to its ``--root``, LCOV usually absolute, coverage.py's JSON relative to the directory it ran in.
The git diff names files relative to the repository root, so everything is brought to that form;
when that fails a suffix match (as diff-cover does with its source roots) is the fallback.
"""
from __future__ import annotations

import os
import posixpath


def to_unix(path: str) -> str:
    return path.replace("\\", "/")


def repo_relative(path: str, root: str | None, sources: list[str] | None = None) -> str:
    """Best repository-relative spelling of ``path`` given the report's source directories.

    A spelling that names an existing file under ``root`` wins; otherwise the first one under
    ``root``; otherwise the path as written (a report made on another machine), which ``match``
    can still pair with the diff by suffix.
    """
    path = to_unix(path)
    candidates = [posixpath.join(to_unix(s.strip()), path) for s in sources or [] if s and s.strip()]
    candidates.append(path)
    root_abs = to_unix(os.path.normpath(os.path.abspath(root or os.getcwd())))
    under: list[str] = []
    for cand in candidates:
        full = posixpath.normpath(cand if posixpath.isabs(cand) else posixpath.join(root_abs, cand))
        if full.startswith(root_abs + "/"):
            rel = posixpath.relpath(full, root_abs)
            if os.path.isfile(os.path.join(root_abs, rel)):
                return rel
            under.append(rel)
    return under[0] if under else posixpath.normpath(path).lstrip("/")


def match(diff_path: str, report_paths: set[str]) -> str | None:
    """The report path that names the same file as ``diff_path`` (exact, else unique suffix)."""
    if diff_path in report_paths:
        return diff_path
    hits = [p for p in report_paths if p.endswith("/" + diff_path) or diff_path.endswith("/" + p)]
    return hits[0] if len(hits) == 1 else None
