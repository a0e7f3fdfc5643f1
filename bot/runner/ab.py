"""``perfbot ab``: same-job A/B of two revisions, the default way to judge a pull request.

Both revisions are checked out as temporary git worktrees and each is measured by its own code:
its workers run ``python -m bot.runner.worker`` with ``PYTHONPATH`` set to its worktree, so they
import that revision's compiler. The model files and seeded inputs are built once, by the code
perfbot itself runs from, so both sides see identical graphs and feeds, and the workers' own
measuring code (bot/) is this perfbot's too: only the compiler differs between the sides. Row by
row the sides take turns in ABBA order (base, head; head, base; ...) so that slow drift of the
machine (clocks, temperature, other load) hits both alike. Each round runs in fresh worker
processes (see ``Settings.worker_per_round``), so every round adds one independent block per
side. After the planned rounds the comparison is checked after every further round and stops as
soon as it is settled (``bot.compare.settled``) or ``max_rounds`` is reached. Two runs are
recorded in the store.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bot.results_doc import SCHEMA_ID
from bot.runner import machine
from bot.runner.progress import make_display
from bot.runner.schedule import device_pool, key_of, measure_rows, suite_positions
from bot.runner.sides import Settings, Side, SideResult, keep_logs_note, measure_row
from bot.outfiles import check_model_cache, make_folder
from bot.runner.suite import CODE_ROOT, LOG_ROOT, now_iso, row_label, safe_name, select_rows, suite_label
from bot.runner.time_budget import TimeBudget
from bot.runner.worktrees import Worktree, repo_root, revision_worktrees

COMPILER_FILE = Path("compiler") / "__init__.py"


@dataclass
class AbRequest:
    base: str
    head: str
    suite: str | None = None
    target: str | None = None
    quiet: bool = False
    settings: Settings = field(default_factory=lambda: Settings(target="cpu", rounds=6, max_rounds=16,
                                                                repeats=3, worker_per_round=True))
    devices: str | None = None     # --devices: GPUs to spread the rows' rounds over
    time_limit_s: float | None = None   # --time-limit: rows not started by then are not measured
    threshold_pct: float | None = None  # --threshold: the default threshold of the comparison


@dataclass
class AbOutcome:
    base_run: str
    head_run: str
    base_doc: dict
    head_doc: dict
    compare: dict
    remeasured: set = field(default_factory=set)  # (name, batch, mode) given extra rounds


def run_ab(store, request: AbRequest, announce=lambda text: None) -> AbOutcome:
    from bot.compare.pair import compare_config, compare_docs
    from bot.results_doc import validate_compare

    settings = request.settings
    settings.target = machine.choose_target(request.target)
    settings.profile = True  # flagged rows' comments split the change by instruction
    suite = request.suite or "smoke"
    rows = select_rows(settings.manifest, suite, None)
    pool = device_pool(request.devices, settings.target, settings.seed)
    config = compare_config(rows=rows, threshold=request.threshold_pct)
    make_folder(LOG_ROOT, "worker log folder")  # before any run is recorded
    check_model_cache()
    repo = repo_root()
    remeasured: set = set()
    budget = TimeBudget(request.time_limit_s) if request.time_limit_s is not None else None
    with revision_worktrees(repo, {"base": request.base, "head": request.head}) as trees:
        sides = [_side(trees["base"]), _side(trees["head"])]
        for side in sides:
            if side.unavailable:
                announce(side.unavailable)
        settings.tool_root = CODE_ROOT
        runs = {label: _run_meta(tree, settings, suite) for label, tree in trees.items()}
        for label, run in runs.items():
            run["id"] = store.create_run(run)
        announce(f"base run {runs['base']['id']}, head run {runs['head']['id']}")
        settings.logdir = make_folder(LOG_ROOT / safe_name(runs["head"]["id"]), "worker log folder")
        with tempfile.TemporaryDirectory(prefix="perfbot-ab-data-") as work, \
                make_display(len(rows), quiet=request.quiet) as display:
            settings.workdir = Path(work)
            places = suite_positions(rows)

            def measure(row, placement):
                label = row_label(row)
                display.row_started(label)
                if budget is not None and not budget.allows_another_row():
                    return [dict(SideResult(error=budget.reason()).as_row(row), wall_s=0.0) for _ in sides], False
                comparison = _RowComparison(row, runs, store, config)
                measured = measure_row(
                    row, sides, settings, prepare_root=CODE_ROOT, placement=placement,
                    on_phase=lambda s, p, label=label: display.phase(label, s, p),
                    decide=comparison.settled, explain=comparison.flagged)
                if budget is not None:
                    budget.row_took(measured[0][0]["wall_s"])
                return measured

            def record(row, measured):
                results, again = measured
                place = places[key_of(row)] if pool else None
                store.add_row(runs["base"]["id"], results[0], place)
                store.add_row(runs["head"]["id"], results[1], place)
                if again:
                    remeasured.add(key_of(row))
                display.row_finished(row_label(row), results, ["base", "head"])

            measure_rows(rows, pool, settings.worker_per_round, measure, record,
                         store.row_costs(settings.target) if pool else None)
        for run in runs.values():
            store.finish_run(run["id"])
    note = keep_logs_note(settings.logdir)
    if note:
        announce(note)
    base_doc, head_doc = store.get_run(runs["base"]["id"]), store.get_run(runs["head"]["id"])
    comparison = compare_docs(base_doc, head_doc, store, config).doc
    for row in comparison.get("rows", []):
        if (row.get("name"), row.get("batch"), row.get("mode")) in remeasured:
            row["remeasured"] = True
    _note_unsettled(comparison, config, settings.max_rounds)
    validate_compare(comparison)  # the marks and notes were added here: check the contract
    return AbOutcome(runs["base"]["id"], runs["head"]["id"], base_doc, head_doc, comparison, remeasured)


def _note_unsettled(comparison: dict, config, max_rounds: int) -> None:
    """A row flagged when the rounds ran out, before its flag settled (p below a tenth of alpha),
    keeps its flag and says so: six rounds a side cannot go below p = 0.0011 (1 in 924), and a
    same-commit A/B capped there on the H200 flagged a batch-1 row +2.41 % at p = 0.0022 that
    later runs did not repeat."""
    from bot.compare import settled
    from bot.compare.stats import IMPROVEMENT, REGRESSION

    for row in comparison.get("rows", []):
        if row.get("mark") in (REGRESSION, IMPROVEMENT) and not settled(row, config):
            note = (f"flagged when the rounds ran out ({max_rounds}, --max-rounds), before p fell "
                    f"below {config.alpha / 10:g}: measure it again with more rounds")
            row["reason"] = f"{row['reason']}; {note}" if row.get("reason") else note


def _side(tree: Worktree) -> Side:
    if not (tree.path / COMPILER_FILE).is_file():
        return Side(tree.label, tree.path, unavailable=(
            f"{tree.label} revision {tree.commit[:12]} has no compiler "
            f"(no {COMPILER_FILE.as_posix()}), so it cannot be measured"))
    return Side(tree.label, tree.path)


def _run_meta(tree: Worktree, settings: Settings, suite: str) -> dict:
    target = settings.target
    return {"commit": tree.commit, "branch": tree.branch, "target": target, "suite": suite_label(suite),
            "shard": None, "started": now_iso(), "machine": machine.machine_info(target),
            "versions": machine.package_versions(),
            "measurement": dict(settings.measurement(), mode="ab")}


class _RowComparison:
    """The comparison of one row as measured so far, made once per state of the sides: the
    settling check after the last round and the profile check that follows it ask the same."""

    def __init__(self, row, runs: dict, store, config):
        self.row, self.runs, self.store, self.config = row, runs, store, config
        self._made_for, self._rows = None, []

    def rows(self, found: list[SideResult]) -> list[dict]:
        """The compare rows of the sides' results as they are now."""
        state = tuple((len(r.samples), r.error) for r in found)
        if state != self._made_for:
            from bot.compare import compare_results, history_for

            base, head = [{"schema": SCHEMA_ID, "run": self.runs[label], "rows": [r.as_row(self.row)]}
                          for label, r in zip(("base", "head"), found)]
            history = history_for(self.store, base, head) or None
            self._rows = compare_results(base, head, self.config, history).get("rows", [])
            self._made_for = state
        return self._rows

    def settled(self, found: list[SideResult]) -> bool:
        """Whether the comparison of this row needs no more rounds."""
        from bot.compare import settled
        return all(settled(r, self.config) for r in self.rows(found))

    def flagged(self, found: list[SideResult]) -> bool:
        """Whether the row comes out as one whose details show where the time moved
        (``profile_diff.explained``): only such a row is profiled. Profiling every row took 23 of
        the 392 step-seconds of a whole-suite A/A part on the H200."""
        from bot.compare.profile_diff import explained
        return any(explained(r) for r in self.rows(found))
