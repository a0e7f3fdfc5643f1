"""Turning the paths a coverage tool wrote into paths relative to the repository root.

Tools disagree: coverage.py's XML names files relative to a ``<source>`` directory, gcovr relative
to its ``--root``, lcov absolute, c8/nyc and coverage.py's JSON and LCOV relative to the directory
they ran in (a package of a monorepo, ``src/``), and a report made by CI names the CI machine's
checkout (``/home/runner/_work/...``, ``C:\\a\\...``). The git diff names files relative to the
repository root, so everything is brought to that form, in this order:

1. a spelling (joined to a ``<source>``, to the root, or to the current directory) that names a
   file of the checkout;
2. else the file of the checkout whose path ends with the longest trailing part of the report's
   path, when exactly one does (Codecov's "path fixing"; at least two components, so a system
   ``/usr/include/stdio.h`` is not taken for a vendored ``stdio.h``);
3. else, for a file of the system rather than of the project (an absolute path outside the
   checkout that exists on this machine, or lies in a system directory such as /usr/include):
   ``None``, and the readers leave the file out. Codecov leaves out files that are not in the
   repository too; without this a raw ``lcov --capture`` of a C++ project is mostly libstdc++.
4. else the path as written, normalised, so ``match`` can still pair it with the diff by suffix.
   Files the checkout does not have are otherwise kept: a base report legitimately names files
   the head deleted, and a report from another machine names paths that do not exist here.
"""
from __future__ import annotations

import os
import posixpath
import subprocess
from urllib.parse import unquote

# Directories never worth walking when the root is not a git checkout.
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".tox", ".venv", "venv"}
_WALK_LIMIT = 200_000
# Where compilers and SDKs keep their headers, also on the machine that made a report.
_SYSTEM_DIRS = ("/usr/include/", "/usr/lib/", "/usr/local/include/", "/usr/local/lib/",
                "/opt/homebrew/", "/Library/Developer/", "/Applications/Xcode")


def decode_line(raw: bytes) -> str:
    """One line of a report or diff: UTF-8, else Latin-1.

    lcov 1.x writes a UTF-8 file name (``café.c``) back out as Latin-1 bytes, and a file name that
    is not UTF-8 at all reaches git's diff as raw bytes too. Decoding every such line the same way,
    here and in the diff, keeps the report's and the diff's spelling of the name equal; Latin-1
    never fails, so nothing is lost or refused.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def to_unix(path: str) -> str:
    return path.replace("\\", "/")


def _clean(path: str) -> str:
    """Unix separators, no ``file://`` scheme, no surrounding blanks."""
    path = to_unix(path.strip())
    if path.startswith("file://"):
        path = unquote(path[len("file://"):])
    return path


def _is_absolute(path: str) -> bool:
    # A Windows drive ("C:/...") is absolute too, though not on this machine.
    return path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] == "/")


class RepoFiles:
    """The files of a checkout, listed once, to spell report paths the way the diff does."""

    def __init__(self, root: str | None):
        self.root = to_unix(os.path.normpath(os.path.abspath(root or os.getcwd())))
        self._by_name: dict[str, list[str]] | None = None

    def _list(self) -> list[str]:
        try:
            done = subprocess.run(
                ["git", "-C", self.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True, check=False)
        except OSError:
            done = None
        if done is not None and done.returncode == 0:
            names = done.stdout.decode("utf-8", errors="replace").split("\0")
            return [n for n in names if n]
        found: list[str] = []
        for top, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
            rel = posixpath.relpath(to_unix(top), self.root)
            found.extend(f if rel == "." else f"{rel}/{f}" for f in files)
            if len(found) > _WALK_LIMIT:
                break
        return found

    def named(self, basename: str) -> list[str]:
        if self._by_name is None:
            self._by_name = {}
            for rel in self._list():
                self._by_name.setdefault(posixpath.basename(rel), []).append(rel)
        return self._by_name.get(basename, [])

    def exists(self, rel: str) -> bool:
        return os.path.isfile(os.path.join(self.root, rel))

    def under_root(self, path: str, base: str) -> str | None:
        """``path`` (absolute, or relative to ``base``) relative to the root, if it lies under it."""
        full = posixpath.normpath(path if _is_absolute(path) else posixpath.join(base, path))
        if full.startswith(self.root + "/"):
            return posixpath.relpath(full, self.root)
        return None

    def by_suffix(self, path: str) -> str | None:
        """The one checkout file ending with the longest trailing part of ``path``."""
        parts = [p for p in posixpath.normpath(path).split("/") if p not in ("", ".", "..")]
        if parts and len(parts[0]) == 2 and parts[0][1] == ":":
            parts = parts[1:]  # Windows drive
        if not parts:
            return None
        named = self.named(parts[-1])
        shortest = 1 if len(parts) == 1 else 2
        for size in range(len(parts), shortest - 1, -1):
            tail = "/".join(parts[-size:])
            hits = [n for n in named if n == tail or n.endswith("/" + tail)]
            if len(hits) == 1:
                return hits[0]
            if hits:
                return None  # ambiguous: a shorter tail only matches more files
        return None

    def is_system(self, path: str) -> bool:
        """An absolute path outside the checkout that names a file of this machine or of a
        system directory: a compiler's or SDK's header, not the project's code."""
        if not _is_absolute(path) or self.under_root(path, self.root) is not None:
            return False
        return path.startswith(_SYSTEM_DIRS) or os.path.isfile(path)

    def resolve(self, path: str, sources: list[str] | None = None) -> str | None:
        """The repository-relative spelling of ``path``; ``None`` for a system file."""
        path = _clean(path)
        roots = [_clean(s) for s in sources or [] if s and s.strip()]
        spellings = [posixpath.join(s, path) for s in roots] + [path]
        bases = [self.root, to_unix(os.getcwd())]
        under: list[str] = []
        for spelling in spellings:
            for base in bases:
                rel = self.under_root(spelling, base)
                if rel is None:
                    continue
                if self.exists(rel):
                    return rel
                under.append(rel)
        for spelling in spellings:
            found = self.by_suffix(spelling)
            if found is not None:
                return found
        if under:
            return under[0]
        if all(self.is_system(spelling) for spelling in spellings):
            return None
        return posixpath.normpath(path).lstrip("/") if path else path


def repo_relative(path: str, root: str | None, sources: list[str] | None = None) -> str | None:
    """Best repository-relative spelling of one ``path`` (see the module docstring)."""
    return RepoFiles(root).resolve(path, sources)


def match(diff_path: str, report_paths: set[str]) -> str | None:
    """The report path that names the same file as ``diff_path`` (exact, else unique suffix)."""
    if diff_path in report_paths:
        return diff_path
    hits = [p for p in report_paths if p.endswith("/" + diff_path) or diff_path.endswith("/" + p)]
    return hits[0] if len(hits) == 1 else None
