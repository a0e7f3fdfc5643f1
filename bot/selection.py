"""Checking the user's choice of manifest and of suite/row names before anything runs.

The manifest's own lookup says "unknown model" and lists every row (dozens of names) even when
the user typed a suite; here a name that is neither gets one short line with the suites and the
nearest row names.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from compiler.errors import UserError


class SelectionError(UserError):
    """--manifest, --suite or a row name does not name anything usable."""


def check_manifest_path(path: str | None) -> None:
    """A --manifest that is a folder (or missing) is refused with its flag named."""
    if not path:  # as the manifest loader reads it: no path is the packaged manifest
        return
    given = Path(path)
    if given.is_dir():
        raise SelectionError(f"--manifest {path} is a folder; give the suite's .toml file")
    if not given.exists():
        raise SelectionError(f"--manifest {path}: no such file")


def check_names(manifest, spec: str) -> None:
    """Every comma-separated item of ``spec`` is a suite or a row of ``manifest``."""
    rows = [row.name for row in manifest.rows]
    for item in (n.strip() for n in spec.split(",")):
        if not item or item in manifest.suites or item in rows:
            continue
        suites = ", ".join(manifest.suites) or "none"
        close = difflib.get_close_matches(item, list(manifest.suites) + rows, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else \
            "; `perfbot models list --suite SUITE` shows the rows"
        shown = item if len(item) <= 80 else item[:79] + "…"
        raise SelectionError(f"{shown!r} is neither a suite nor a row of manifest "
                             f"{manifest.path} (suites: {suites}){hint}")
