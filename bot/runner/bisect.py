"""``perfbot bisect``: which commit between a good and a bad revision slowed one row down.

The candidates are the commits after ``good`` up to and including ``bad`` on ``bad``'s
first-parent line (``git rev-list --first-parent --ancestry-path``): a regression that came in
through a merged branch is pinned on its merge commit. Every step is a ``perfbot ab`` of the
step's commit against the good commit, with the same rounds and statistics, so every verdict is
"slower than the known-good code", never "slower than a neighbour" (a slowdown split over two
commits is still found at the first one that crosses the threshold).

The bad commit is measured first: a regression that does not reproduce ends the search there.
Then the usual binary search over the commits in between, so 16 candidates take 1 + 4 steps. A
step whose drop reaches the threshold without significance (``needs_remeasure`` on an ✅ row) is
measured once more with twice the rounds; if it is still undecided it counts as good. A commit
whose row fails to run (an error row on the head side) is skipped, as ``git bisect skip`` does,
and the next untested commit nearest the middle is tried instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from common.errors import UserError
from bot.runner.ab import AbRequest, run_ab
from reports.bisect import p_text, pct
from bot.runner.machine import git
from bot.runner.sides import Settings
from bot.runner.suite import select_rows
from bot.runner.worktrees import repo_root, resolve

BAD, GOOD, SKIPPED = "bad", "good", "skipped"


@dataclass
class BisectRequest:
    good: str
    bad: str
    row: str
    target: str | None = None
    quiet: bool = False
    settings: Settings = field(default_factory=lambda: AbRequest("", "").settings)  # ab's
    threshold_pct: float | None = None      # --threshold of each step's comparison


@dataclass
class Step:
    number: int
    commit: str
    subject: str
    position: int              # 1-based place among the candidates, oldest first
    verdict: str               # bad, good or skipped
    mark: str                  # the compare row's mark
    diff_pct: float | None
    p_value: float | None
    rate_old: float | None
    rate_new: float | None
    rounds: int                # planned rounds of the A/B that decided the step
    remeasured: bool           # measured again because the first A/B was inconclusive
    reason: str | None
    base_run: str
    head_run: str


@dataclass
class BisectOutcome:
    good: str
    bad: str
    row: str
    candidates: list[tuple[str, str]]    # (commit, subject), oldest first; the last is ``bad``
    steps: list[Step]
    # found; ambiguous (skipped commits in the way); not-reproduced; bad-fails (the row errors)
    status: str
    first_bad: Step | None               # the step that measured the first bad commit
    suspects: list[str] = field(default_factory=list)  # status ambiguous: any of these

    def as_dict(self) -> dict:
        return {"schema": "perfbot.bisect/1", "good": self.good, "bad": self.bad, "row": self.row,
                "status": self.status, "candidates": len(self.candidates),
                "first_bad": self.first_bad.__dict__ if self.first_bad else None,
                "suspects": self.suspects, "steps": [s.__dict__ for s in self.steps]}


def candidate_commits(repo, good: str, bad: str) -> list[tuple[str, str]]:
    """(commit, subject) after ``good`` up to ``bad``, oldest first."""
    if git(["merge-base", "--is-ancestor", good, bad], repo) is None:
        raise UserError(f"the good commit {good[:12]} is not an ancestor of the bad commit {bad[:12]}")
    listed = git(["log", "--reverse", "--first-parent", "--ancestry-path", "--format=%H %s",
                  f"{good}..{bad}"], repo) or ""
    commits = [tuple(line.split(" ", 1)) if " " in line else (line, "") for line in listed.splitlines()]
    if not commits:
        raise UserError(f"there are no commits between {good[:12]} and {bad[:12]}")
    return commits


def run_bisect(store, request: BisectRequest, announce=lambda text: None) -> BisectOutcome:
    if "," in request.row:
        raise UserError(f"--row takes one row name, not a list: {request.row!r}")
    select_rows(request.settings.manifest, request.row, None)  # an unknown row: one line, nothing run
    repo = repo_root()
    good, bad = resolve(repo, request.good)[0], resolve(repo, request.bad)[0]
    candidates = candidate_commits(repo, good, bad)
    announce(f"{len(candidates)} commits between {good[:12]} and {bad[:12]}")
    search = _Search(store, request, good, candidates, announce)
    last = len(candidates) - 1
    verdict = search.measure(last).verdict
    if verdict != BAD:  # nothing to search for: the bad commit is not slower, or does not run
        return search.outcome("not-reproduced" if verdict == GOOD else "bad-fails", None)
    low, high = -1, last  # the newest known-good and the oldest known-bad index
    skipped: set[int] = set()
    while True:
        untested = [i for i in range(low + 1, high) if i not in skipped]
        if not untested:
            break
        index = untested[len(untested) // 2]
        verdict = search.measure(index).verdict
        if verdict == BAD:
            high = index
        elif verdict == GOOD:
            low = index
        else:
            skipped.add(index)
    between = [candidates[i][0] for i in range(low + 1, high + 1)]
    return search.outcome("found" if len(between) == 1 else "ambiguous", search.decided[high],
                          between if len(between) > 1 else [])


class _Search:
    """The A/B steps taken so far and how to take the next one."""

    def __init__(self, store, request: BisectRequest, good: str, candidates, announce):
        self.store, self.request, self.good = store, request, good
        self.candidates, self.announce = candidates, announce
        self.steps: list[Step] = []
        self.decided: dict[int, Step] = {}

    def measure(self, index: int) -> Step:
        rounds = self.request.settings.rounds
        row, base_run, head_run = self._ab(index, rounds)
        remeasured = _inconclusive(row)
        if remeasured:  # a drop of threshold size without the evidence: once more, longer
            rounds *= 2
            self.announce(f"{self.candidates[index][0][:12]}: inconclusive "
                          f"({pct(row.get('diff_pct'))}), measuring again with {rounds} rounds")
            row, base_run, head_run = self._ab(index, rounds)
        step = self._step(index, row, rounds, remeasured, base_run, head_run)
        self.steps.append(step)
        self.decided[index] = step
        self.announce(f"step {step.number}: {step.commit[:12]} ({step.position} of "
                      f"{len(self.candidates)}) Diff {pct(step.diff_pct)}, p {p_text(step.p_value)}: "
                      f"{step.verdict}")
        return step

    def _ab(self, index: int, rounds: int) -> tuple[dict, str, str]:
        settings = replace(self.request.settings, rounds=rounds,
                           max_rounds=max(rounds, self.request.settings.max_rounds))
        outcome = run_ab(self.store, AbRequest(
            base=self.good, head=self.candidates[index][0], suite=self.request.row,
            target=self.request.target, quiet=self.request.quiet, settings=settings,
            threshold_pct=self.request.threshold_pct), self.announce)
        rows = [r for r in outcome.compare.get("rows", []) if r.get("name") == self.request.row]
        if not rows:
            raise UserError(f"the A/B of {self.candidates[index][0][:12]} has no row {self.request.row!r}")
        row = rows[0]
        if row.get("mark") == "error" and str(row.get("reason") or "").startswith("base:"):
            # Every step measures the good commit again: if it cannot run, no step can decide.
            raise UserError(f"the good commit {self.good[:12]} cannot be measured: {row['reason']}")
        return row, outcome.base_run, outcome.head_run

    def _step(self, index: int, row: dict, rounds: int, remeasured: bool, base_run: str,
              head_run: str) -> Step:
        mark = row.get("mark")
        verdict = BAD if mark == "regression" else SKIPPED if mark == "error" else GOOD
        commit, subject = self.candidates[index]
        return Step(len(self.steps) + 1, commit, subject, index + 1, verdict, mark,
                    row.get("diff_pct"), row.get("p_value"), row.get("rate_old"),
                    row.get("rate_new"), rounds, remeasured, row.get("reason"), base_run, head_run)

    def outcome(self, status: str, first_bad: Step | None, suspects=()) -> BisectOutcome:
        return BisectOutcome(self.good, self.candidates[-1][0], self.request.row, self.candidates,
                             self.steps, status, first_bad, list(suspects))


def _inconclusive(row: dict) -> bool:
    from bot.compare import needs_remeasure

    return row.get("mark") != "regression" and needs_remeasure(row)
