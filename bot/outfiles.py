"""Writing the files a command was asked to produce (``--out``, ``--html``, ``--out-dir``).

A path the user gave can be a folder, sit under a file, or be read-only; each of those is one
line naming the path (an ``OutputError``), not an ``OSError`` traceback. Files are written to a
temporary name and renamed, so a reader (or a killed job) never sees half a file.
"""
from __future__ import annotations

import os
from pathlib import Path

from common.errors import UserError


class OutputError(UserError):
    """An output file or folder the user named cannot be written."""


def _reason(exc: OSError) -> str:
    if isinstance(exc, IsADirectoryError):
        return "it is a folder"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a file is in the way of a folder on its path"
    return exc.strerror or str(exc)


def make_folder(path: str | Path, what: str = "output folder") -> Path:
    """Create ``path`` (and its parents) if missing; it must end up a writable folder."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {what} {folder}: {_reason(exc)}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write into {what} {folder}: permission denied")
    return folder


def check_output(path: str | Path, what: str = "output file") -> Path:
    """Fail now, before any long work, if ``path`` cannot become a file (its folder is created)."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {what} {target}: it is a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {target}: {_reason(exc)}") from None
    return target


def write_output(path: str | Path, data: str | bytes, what: str = "output file") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; returns the path."""
    target = check_output(path, what)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the error below is what matters
        raise OutputError(f"cannot write {what} {target}: {_reason(exc)}") from None
    return target


def check_model_cache(cache_dir: str | Path | None = None) -> Path:
    """The model cache folder (--cache-dir, else $PERFBOT_CACHE_DIR/models, else the user cache),
    created now: a bad one is one line before any model is built or any run recorded."""
    from models.cache import cache_root

    if cache_dir:
        what = "--cache-dir"
    elif os.environ.get("PERFBOT_CACHE_DIR"):
        what = "model cache ($PERFBOT_CACHE_DIR)"
    else:
        what = "model cache"
    return make_folder(cache_root(cache_dir), what)
