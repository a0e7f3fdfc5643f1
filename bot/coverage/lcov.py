"""LCOV tracefiles (``.info``), as written by lcov/geninfo, gcovr ``--lcov``, coverage.py
``coverage lcov``, c8, nyc, llvm-cov and others.

``SF:`` starts a file, ``DA:line,hits[,checksum]`` is a line, ``BRDA:line,block,branch,taken`` a
branch outcome (``-``: the branch's block never ran; gcov's older ``BA:line,state`` too),
``FN:line[,end],name`` and
``FNDA:hits,name`` a function, ``end_of_record`` ends the section. Every other record (``TN:``,
``VER:``, the ``LF``/``LH``/``BRF``/``BRH``/``FNF``/``FNH`` summaries, lcov 2's ``FNL``/``FNA``)
is skipped: the figures are recomputed from the detail records.

The same file may have several sections (one per test name ``TN:``, or lcov listing a header once
per compilation unit that included it). They are merged as lcov merges them: line hits add up, and
a branch, named by ``(line, block, branch)``, is taken when any section took it, so a header's
``if`` whose two outcomes ran in two different units is fully covered, not "2 of 4".

How lines are counted follows diff-cover's LCOV reader, because patch coverage must equal its
numbers: a line named only by ``BRDA`` counts (missed when a branch was not taken), a line with
``DA`` 0 whose branches ran counts as run, and a function's first line with no ``DA`` of its own
(nyc writes these) counts with the function's hits.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles, decode_line

# "FN:12,18,name" (lcov 2 adds the end line) vs "FN:12,name": names never start with a digit.
_FN_END = re.compile(r"(\d+),(.*)")


@dataclass
class _FileData:
    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[tuple[int, str, str], int] = field(default_factory=dict)
    function_line: dict[str, int] = field(default_factory=dict)
    function_hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ba_seen: dict[int, int] = field(default_factory=dict)  # BA records so far, per line, this section


def _count(text: str) -> int:
    # Some writers emit "1.0" or a negative count from a gcov overflow; neither is an error.
    return max(int(float(text)), 0)


def _parse_record(data: _FileData, tag: str, value: str) -> None:
    if tag == "DA":
        fields = value.split(",")
        line = int(fields[0])
        data.lines[line] = data.lines.get(line, 0) + _count(fields[1])
    elif tag == "BRDA":
        # The branch field is free text for some writers (coverage.py: "jump to line 3"); the
        # count is always last.
        line, block, rest = value.split(",", 2)
        branch, taken = rest.rsplit(",", 1)
        key = (int(line), block.strip(), branch.strip())
        data.branches[key] = data.branches.get(key, 0) + (0 if taken.strip() == "-" else _count(taken))
    elif tag == "BA":
        # gcov's older branch record, still in Bazel's LCOV: BA:line,state with state 0 (block
        # never ran), 1 (ran, branch not taken), 2 (taken). Outcomes are numbered per line, in
        # order, within the section.
        line_text, state = value.split(",", 1)
        line = int(line_text)
        data.ba_seen[line] = data.ba_seen.get(line, 0) + 1
        key = (line, "BA", str(data.ba_seen[line]))
        data.branches[key] = data.branches.get(key, 0) + (1 if int(state) == 2 else 0)
    elif tag == "FN":
        line, rest = value.split(",", 1)
        ended = _FN_END.fullmatch(rest)
        data.function_line.setdefault(ended.group(2) if ended else rest, int(line))
    elif tag == "FNDA":
        hits, name = value.split(",", 1)
        data.function_hits[name] += _count(hits)


def _finish(report: CoverageReport, path: str, data: _FileData) -> None:
    entry = report.file(path)
    lines = dict(data.lines)
    per_line: dict[int, list[int]] = defaultdict(list)
    for (line, _, _), taken in data.branches.items():
        per_line[line].append(taken)
    for line, takens in per_line.items():
        covered, executions = sum(1 for t in takens if t > 0), sum(takens)
        if line not in lines:
            lines[line] = 0 if covered < len(takens) else executions
        elif lines[line] == 0 and executions > 0:
            lines[line] = executions
        entry.add_branch(line, covered, len(takens))
    for name, line in data.function_line.items():
        lines.setdefault(line, data.function_hits.get(name, 0))
    for line, hits in lines.items():
        entry.add_line(line, hits)
    if per_line:
        report.has_branches = True


def read_lcov(path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="lcov", source=path)
    repo = RepoFiles(root)
    files: dict[str, _FileData] = {}
    current: _FileData | None = None
    seen_record = False
    lineno, raw = 0, ""
    try:
        with open(path, "rb") as handle:
            for lineno, data in enumerate(handle, 1):
                # A byte-order mark from a Windows tool must not hide the first record.
                raw = decode_line(data.removeprefix(b"\xef\xbb\xbf") if lineno == 1 else data)
                tag, _, value = raw.strip().partition(":")
                if not tag:
                    continue
                seen_record = True
                if tag == "SF":
                    resolved = repo.resolve(value)
                    if resolved is None:  # a system header: read, then left out
                        report.dropped.append(value.strip())
                        current = _FileData()
                    else:
                        current = files.setdefault(resolved, _FileData())
                elif tag == "end_of_record":
                    if current is not None:
                        current.ba_seen.clear()
                    current = None
                elif tag in ("DA", "BRDA", "BA", "FN", "FNDA"):
                    if current is None:
                        raise CoverageInputError(f"{path}:{lineno}: {tag} record outside an SF: section")
                    _parse_record(current, tag, value)
    except (ValueError, IndexError):
        raise CoverageInputError(f"{path}:{lineno}: malformed LCOV record {raw.strip()[:80]!r}") from None
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read coverage report ({exc.strerror})") from None
    if not seen_record:
        raise CoverageInputError(f"{path}: empty LCOV tracefile")
    for name, data in files.items():
        _finish(report, name, data)
    return report
