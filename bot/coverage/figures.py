"""The numbers of a coverage comparison: project totals of base and head, patch coverage of the
added lines, and the files whose coverage the change touched.

Project coverage follows Codecov: ``hits / lines`` where a line that ran but left a branch
untaken is a *partial*, not a hit. Patch coverage follows diff-cover (whose numbers it must equal):
an added coverable line counts as covered when it ran at all; added lines of files the report does
not measure, or that are not coverable, are not counted.

Which lines are coverable, and whether they ran, is each reader's business (see ``lcov`` for the
rules diff-cover applies to LCOV). One divergence is deliberate: when a Cobertura report names the
same file in several classes and they disagree about a line, diff-cover counts the line missed if
any class missed it; here a line ran if any class ran it, since that is what happened.
"""
from __future__ import annotations

import posixpath
from dataclasses import asdict, dataclass, field

# Coverage as every report shows it (two decimals, rounded down): the delta is of those figures.
from reports.formatting import floor2

from .gitdiff import ChangedLines
from .model import CoverageReport, FileCoverage
from .paths import match


def percent(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def rounded_delta(new: float | None, old: float | None) -> float | None:
    """Difference of the two figures *as shown*, so the box adds up on screen."""
    if new is None or old is None:
        return None
    return round(floor2(new) - floor2(old), 2)


@dataclass
class Totals:
    files: int = 0
    lines: int = 0
    hits: int = 0
    misses: int = 0
    partials: int = 0
    branches: int = 0
    has_branches: bool = False

    @property
    def coverage(self) -> float | None:
        return percent(self.hits, self.lines)

    def add(self, entry: FileCoverage, has_branches: bool) -> None:
        self.files += 1
        for number, hits in entry.lines.items():
            self.lines += 1
            if hits == 0:
                self.misses += 1
            elif has_branches and entry.is_partial(number):
                self.partials += 1
            else:
                self.hits += 1
        self.branches += sum(total for _, total in entry.branches.values())


def totals_of(report: CoverageReport, paths: list[str] | None = None) -> Totals:
    totals = Totals(has_branches=report.has_branches)
    for path in paths if paths is not None else report.files:
        totals.add(report.files[path], report.has_branches)
    return totals


@dataclass
class ImpactedFile:
    path: str
    head_pct: float | None          # None: the file is missing from the head report ("?")
    base_pct: float | None          # None: new file, no base figure
    patch_lines: int = 0            # coverable added lines
    patch_hits: int = 0
    in_diff: bool = False

    @property
    def patch_pct(self) -> float | None:
        return percent(self.patch_hits, self.patch_lines)

    @property
    def delta(self) -> float | None:
        return rounded_delta(self.head_pct, self.base_pct)


@dataclass
class CoverageResult:
    head: Totals
    base: Totals | None
    patch_lines: int = 0
    patch_hits: int = 0
    files: list[ImpactedFile] = field(default_factory=list)
    base_name: str | None = None
    base_commit: str | None = None
    head_name: str | None = None
    head_commit: str | None = None

    @property
    def patch_pct(self) -> float | None:
        """Covered added lines / coverable added lines; None ("n/a") when nothing coverable was added."""
        return percent(self.patch_hits, self.patch_lines)

    @property
    def delta(self) -> float | None:
        return rounded_delta(self.head.coverage, self.base.coverage if self.base else None)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["head"]["coverage"] = self.head.coverage
        if self.base is not None:
            out["base"]["coverage"] = self.base.coverage
        out["patch_pct"], out["delta"] = self.patch_pct, self.delta
        for item, impacted in zip(out["files"], self.files):
            item["patch_pct"], item["delta"] = impacted.patch_pct, impacted.delta
        return out


def _file_pct(report: CoverageReport | None, path: str | None) -> float | None:
    if report is None or path is None or path not in report.files:
        return None
    return totals_of(report, [path]).coverage


def _changed(head: FileCoverage, base: FileCoverage | None) -> bool:
    return base is None or head.lines != base.lines or head.branches != base.branches


def _claimed(diff_path: str, diff_paths: dict[str, list[str]], report_paths: set[str]) -> str | None:
    """The report file of ``diff_path``, unless another changed file's path pairs with it as
    well (a report's bare ``main.c`` against the diff's ``src/main.c`` and ``tests/main.c``):
    then nobody can tell which one it measured, and counting it twice would be wrong."""
    found = match(diff_path, report_paths)
    if found is None or found == diff_path:
        return found
    same_name = diff_paths.get(posixpath.basename(diff_path), [])  # a suffix match keeps the name
    rivals = [other for other in same_name if other != diff_path and match(other, {found}) == found]
    return None if rivals else found


def compare_coverage(head: CoverageReport, base: CoverageReport | None = None,
                     diff: ChangedLines | None = None, *, base_name: str | None = None,
                     base_commit: str | None = None, head_name: str | None = None,
                     head_commit: str | None = None) -> CoverageResult:
    """Everything the coverage comment shows, from two reports and the change between them."""
    diff = diff or ChangedLines()
    result = CoverageResult(
        head=totals_of(head), base=totals_of(base) if base is not None else None,
        base_name=base_name or diff.base_ref, base_commit=base_commit or diff.base_commit,
        head_name=head_name or diff.head_ref, head_commit=head_commit or diff.head_commit)
    head_paths, base_paths = set(head.files), set(base.files) if base else set()
    impacted: dict[str, ImpactedFile] = {}
    by_name: dict[str, list[str]] = {}
    for diff_path in diff.added:
        by_name.setdefault(posixpath.basename(diff_path), []).append(diff_path)
    for diff_path, added in diff.added.items():
        head_path = _claimed(diff_path, by_name, head_paths)
        if head_path is None or not head.files[head_path].lines:
            # Not measured (docs, tests, generated files), or measured with nothing coverable in
            # it (an empty __init__.py): like diff-cover, neither counted nor listed.
            continue
        entry = head.files[head_path]
        coverable = added & entry.lines.keys()
        hit = {n for n in coverable if entry.lines[n] > 0}
        result.patch_lines += len(coverable)
        result.patch_hits += len(hit)
        base_path = match(diff.renamed.get(diff_path, head_path), base_paths)
        impacted[head_path] = ImpactedFile(head_path, _file_pct(head, head_path), _file_pct(base, base_path),
                                           len(coverable), len(hit), in_diff=True)
    # Files outside the diff whose coverage still moved (indirect changes) are impacted too.
    for head_path in sorted(head_paths - impacted.keys()):
        base_path = match(head_path, base_paths)
        if not head.files[head_path].lines and (base_path is None or not base.files[base_path].lines):
            continue  # no coverable line on either side: no coverage to have changed
        if base is not None and _changed(head.files[head_path], base.files.get(base_path) if base_path else None):
            impacted[head_path] = ImpactedFile(head_path, _file_pct(head, head_path), _file_pct(base, base_path))
    result.files = sorted(impacted.values(), key=lambda f: f.path)
    return result
