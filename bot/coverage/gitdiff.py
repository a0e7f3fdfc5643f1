"""Added lines per file, from ``git diff`` or a diff file, parsed with unidiff.

``BASE...HEAD`` means what diff-cover means: the changes on HEAD since its merge-base with BASE,
so commits that landed on the base branch meanwhile are not counted as the PR's lines.
"""
from __future__ import annotations

import codecs
import re
import subprocess
from dataclasses import dataclass, field

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from .errors import CoverageInputError
from .paths import decode_line
from .safe_files import check_input_file


@dataclass
class ChangedLines:
    """Lines the change adds or modifies, by repository-relative path (deleted files omitted)."""

    added: dict[str, set[int]] = field(default_factory=dict)
    # New path -> old path of files the change moved, so the moved file's base figure is found.
    renamed: dict[str, str] = field(default_factory=dict)
    base_ref: str | None = None
    head_ref: str | None = None
    base_commit: str | None = None
    head_commit: str | None = None
    root: str | None = None


def parse_changes(text: str) -> ChangedLines:
    """Added lines per file, and the renames, of a unified diff."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise CoverageInputError(f"not a unified diff ({exc})") from None
    changes = ChangedLines()
    for patched in patch:
        if patched.is_removed_file or patched.is_binary_file:
            continue
        lines = {line.target_line_no for hunk in patched for line in hunk if line.is_added}
        # A file whose change is only deletions or a rename still appears, with no lines.
        path = _strip_prefix(patched.path)
        changes.added.setdefault(path, set()).update(lines)
        if patched.is_rename:
            changes.renamed[path] = _strip_prefix(patched.source_file)
    return changes


def parse_diff(text: str) -> dict[str, set[int]]:
    return parse_changes(text).added


def _unquote(path: str) -> str:
    """Git writes a name with a quote, backslash or control character (and, unless
    ``core.quotepath`` is off, any non-ASCII byte) C-quoted: ``"caf\\303\\251.py"``."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = codecs.escape_decode(path[1:-1].encode("utf-8", errors="surrogateescape"))[0]
        return decode_line(raw)
    return path


def _strip_prefix(path: str) -> str:
    # unidiff strips a/ and b/ for git diffs; plain `diff -u` output keeps whatever was written.
    path = _unquote(path.rstrip("\r"))
    return path[2:] if path.startswith(("a/", "b/")) else path


def decode_diff(data: bytes) -> str:
    """Line by line (see ``paths.decode_line``): one Latin-1 source line must not garble the rest."""
    return "".join(decode_line(line) for line in data.splitlines(keepends=True))


def diff_from_file(path: str) -> ChangedLines:
    check_input_file(path, "diff")
    try:
        with open(path, "rb") as handle:
            text = decode_diff(handle.read())
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read diff ({exc.strerror})") from None
    changes = parse_changes(text)
    # unidiff skips lines it does not know, so any file "parses"; a file with text but not one
    # diff header is not a diff, and taking it for "nothing changed" would hide the mistake.
    if not changes.added and text.strip() and not re.search(r"^(?:diff |--- )", text, re.M):
        raise CoverageInputError(f"{path}: not a unified diff (no 'diff' or '---' header line)")
    return changes


def _git(repo: str, *args: str) -> str:
    # quotepath off: non-ASCII names come out as UTF-8, as the coverage reports write them.
    # Bytes decoded by hand, line by line: a Latin-1 source line in the diff must not stop the
    # report, and a name that is not UTF-8 is decoded as the LCOV reader decodes it.
    try:
        done = subprocess.run(["git", "-C", repo, "-c", "core.quotepath=off", *args],
                              capture_output=True, check=False)
    except FileNotFoundError:
        raise CoverageInputError("git is not installed") from None
    if done.returncode != 0:
        first = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["failed"])[0]
        raise CoverageInputError(f"git {' '.join(args)}: {first}")
    return decode_diff(done.stdout)


def split_range(spec: str) -> tuple[str, str, str]:
    """``A...B`` -> (A, B, '...'); ``A..B`` -> (A, B, '..'); ``A`` -> (A, 'HEAD', '...')."""
    for notation in ("...", ".."):
        if notation in spec:
            base, head = spec.split(notation, 1)
            return base or "HEAD", head or "HEAD", notation
    return spec, "HEAD", "..."


def _commit_of(repo: str, rev: str, spec: str) -> str:
    # --verify --quiet says nothing on failure: name the revision and the repository ourselves.
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except CoverageInputError:
        raise CoverageInputError(f"--git {spec}: no commit {rev!r} in {repo}") from None


def diff_from_git(spec: str, repo: str = ".") -> ChangedLines:
    base, head, notation = split_range(spec)
    try:
        root = _git(repo, "rev-parse", "--show-toplevel").strip()
    except CoverageInputError as exc:
        raise CoverageInputError(f"--repo {repo} is not a git repository ({exc})") from None
    base_commit, head_commit = (_commit_of(repo, rev, spec) for rev in (base, head))
    # -M: a moved file is a rename with its few changed lines, whatever diff.renames says, not a
    # new file whose every line counts as added (git's default, and so diff-cover's).
    text = _git(repo, "diff", "--no-color", "--no-ext-diff", "-M", "-U0", f"{base}{notation}{head}", "--")
    changes = parse_changes(text)
    changes.base_ref, changes.head_ref, changes.root = base, head, root
    changes.base_commit, changes.head_commit = base_commit, head_commit
    return changes
