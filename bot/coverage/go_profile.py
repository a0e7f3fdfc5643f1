"""Go coverage profiles (``go test -coverprofile``, ``go tool covdata textfmt``).

After a ``mode: set|count|atomic`` line, each line is one block of statements:
``IMPORT/PATH/file.go:START_LINE.START_COL,END_LINE.END_COL STATEMENTS COUNT``. Profiles of
several test binaries are often concatenated (``-coverpkg=./...`` lists every block once per
package tested, ``cat`` repeats the mode line): the same block is then one block that ran when
any listing ran it.

Blocks become lines the way Codecov turns them into lines, so the figures match what users of
Go projects see there: a block covers its lines from start to end, except an end line that holds
nothing of the block but its closing ``}`` (read from the checkout's copy of the file; without
one the line is kept). A line lying in several blocks (``if cond {`` ends one block and starts
the next) ran when any of them ran, and counts those blocks as its branch outcomes, so a line
where some ran and some did not is a partial.

Paths are import paths: the module path of a ``go.mod`` in the checkout is replaced by that
module's directory, so ``example.com/geometry/shapes/shapes.go`` is ``shapes/shapes.go`` (or
``go/shapes/shapes.go`` in a repository whose module lives in ``go/``).
"""
from __future__ import annotations

import io
import posixpath
import re
from collections import defaultdict

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles, decode_line
from .safe_files import read_checkout_file

_BLOCK = re.compile(r"(.+):(\d+)\.(\d+),(\d+)\.(\d+) (\d+) (\d+)")
_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"/][^\s\"]*)\"?", re.MULTILINE)

Block = tuple[str, int, int, int, int]  # (file, start line, start column, end line, end column)


def looks_like_go_profile(head: bytes) -> bool:
    return head.startswith(b"mode: ")


def _read_blocks(path: str) -> dict[Block, int]:
    """Every block's count, repeated listings merged: counts add up, and in ``set`` mode (where a
    count only says whether the block ran) the block ran when any listing ran it."""
    blocks: dict[Block, int] = {}
    lineno, text, merge = 0, "", max
    try:
        with open(path, "rb") as handle:
            for lineno, raw in enumerate(handle, 1):
                text = decode_line(raw.removeprefix(b"\xef\xbb\xbf") if lineno == 1 else raw).strip()
                if text.startswith("mode:"):
                    mode = text.partition(":")[2].strip()
                    merge = max if mode == "set" else int.__add__
                    continue
                if not text:
                    continue
                found = _BLOCK.fullmatch(text)
                if found is None:
                    raise ValueError(text)
                name, sl, sc, el, ec, _statements, count = found.groups()
                key = (name, int(sl), int(sc), int(el), int(ec))
                blocks[key] = merge(blocks.get(key, 0), int(count))
    except ValueError:
        raise CoverageInputError(f"{path}:{lineno}: malformed Go coverage profile line {text[:80]!r}") from None
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read coverage report ({exc.strerror})") from None
    return blocks


class _Modules:
    """Module path -> directory of its go.mod, for every go.mod the checkout has."""

    def __init__(self, repo: RepoFiles):
        self.by_path: dict[str, str] = {}
        for rel in repo.named("go.mod"):
            data = read_checkout_file(repo.root, rel)
            found = _MODULE.search(data.decode("utf-8", errors="replace")) if data else None
            if found:
                self.by_path[found.group(1)] = posixpath.dirname(rel)
        self._longest_first = sorted(self.by_path, key=len, reverse=True)

    def local(self, import_path: str) -> str | None:
        """``import_path`` spelled from the repository root, by the longest module path it is in."""
        for module in self._longest_first:
            if import_path.startswith(module + "/"):
                return posixpath.join(self.by_path[module], import_path[len(module) + 1:])
        return None


class _Sources:
    """The checkout's copy of each file, read once, to spot lines holding only a ``}``."""

    def __init__(self, root: str):
        self.root = root
        self._lines: dict[str, list[str] | None] = {}

    def line(self, rel: str, number: int) -> str | None:
        if rel not in self._lines:
            # The report names the file: only a regular file inside the checkout is read.
            data = read_checkout_file(self.root, rel)
            self._lines[rel] = None if data is None else [decode_line(raw) for raw in io.BytesIO(data)]
        lines = self._lines[rel]
        return lines[number - 1] if lines is not None and 0 < number <= len(lines) else None


def _only_closing_brace(text: str | None, end_column: int) -> bool:
    return text is not None and text[:end_column - 1].strip() == "}"


def read_go_profile(path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="go coverprofile", source=path)
    repo = RepoFiles(root)
    modules, sources = _Modules(repo), _Sources(repo.root)
    resolved: dict[str, str | None] = {}
    # file -> line -> counts of the blocks that cover the line
    per_line: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for (name, start, _sc, end, end_col), count in _read_blocks(path).items():
        if name not in resolved:
            # Outside a module (GOPATH off), go test names a file "_/abs/dir/file.go".
            written = name[1:] if name.startswith("_/") else name
            local = modules.local(written)
            resolved[name] = repo.resolve(local if local is not None else written)
            if resolved[name] is None:
                report.dropped.append(name)
        rel = resolved[name]
        if rel is None:
            continue
        if end > start and _only_closing_brace(sources.line(rel, end), end_col):
            end -= 1
        for number in range(start, end + 1):
            per_line[rel][number].append(count)
    for rel, lines in per_line.items():
        entry = report.file(rel)
        for number, counts in sorted(lines.items()):
            entry.add_line(number, max(counts))
            if len(counts) > 1:
                entry.add_branch(number, sum(1 for c in counts if c > 0), len(counts))
                report.has_branches = True
    return report
