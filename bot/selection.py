"""Checking the user's --manifest before anything runs.

The manifest names unknown suites and rows itself; here the --manifest flag is named when it
points at a folder or nothing.
"""
from __future__ import annotations

from pathlib import Path

from common.errors import UserError


class SelectionError(UserError):
    """--manifest does not name a manifest file."""


def check_manifest_path(path: str | None) -> None:
    """A --manifest that is a folder (or missing) is refused with its flag named."""
    if not path:  # as the manifest loader reads it: no path is the packaged manifest
        return
    given = Path(path)
    if given.is_dir():
        raise SelectionError(f"--manifest {path} is a folder; give the suite's .toml file")
    if not given.exists():
        raise SelectionError(f"--manifest {path}: no such file")
