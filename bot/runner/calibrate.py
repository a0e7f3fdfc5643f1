"""``perfbot calibrate``: each row's A/A noise on this machine, and the smallest slowdown
``perfbot ab`` catches there (the row's *detectable change*).

For every row, ``rounds`` A/A rounds: the same code on both sides, one fresh worker process per
side and round, in ABBA order, exactly as ``ab`` measures. The processes' medians give the row's
noise, and ``bot.compare.calibration.detectable_change`` turns it into the detectable change for
an ``ab`` of ``ab_rounds`` rounds. With ``verify``, an A/B follows in which the head is slowed by
that much (``bot.runner.delay``: that share more runs in every sample), and the row is checked to
be caught. The result is
one run in the store (``measurement.mode`` "calibrate"), whose rows carry ``detectable_pct`` and a
``calibration`` object; ``compare`` shows the newest one of the same target and GPU beside every
row.
"""
from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bot.outfiles import check_model_cache, make_folder
from bot.runner import machine
from bot.runner.placement import RowPlacement
from bot.runner.progress import make_display
from bot.runner.schedule import device_pool, key_of, measure_rows, suite_positions
from bot.runner.sides import Settings, Side, SideResult, keep_logs_note, measure_row, row_key
from bot.runner.suite import CODE_ROOT, LOG_ROOT, now_iso, row_label, safe_name, select_rows, suite_label
from bot.runner.time_budget import TimeBudget


@dataclass
class CalibrateRequest:
    suite: str | None = None
    target: str | None = None
    ab_rounds: int = 6             # the A/B size the detectable change is given for
    verify: bool = False
    quiet: bool = False
    settings: Settings = field(default_factory=lambda: Settings(target="cpu", rounds=8, repeats=3,
                                                                worker_per_round=True))
    devices: str | None = None     # --devices: GPUs to spread the rows' rounds over
    time_limit_s: float | None = None   # --time-limit: rows not started by then are not calibrated


def run_calibrate(store, request: CalibrateRequest, announce=lambda text: None) -> str:
    """Calibrate every row of the suite; returns the calibration run's id."""
    from bot.compare.calibration import detectable_change
    from bot.compare.measurement import independent_samples

    settings = request.settings
    settings.target = machine.choose_target(request.target)
    settings.worker_per_round = True
    settings.tool_root = CODE_ROOT
    suite = request.suite or "smoke"
    rows = select_rows(settings.manifest, suite, None)
    pool = device_pool(request.devices, settings.target, settings.seed)
    budget = TimeBudget(request.time_limit_s) if request.time_limit_s is not None else None
    make_folder(LOG_ROOT, "worker log folder")
    check_model_cache()
    # No branch: a calibration is no measurement of a branch's history, and never a baseline.
    run = {"commit": machine.current_commit(CODE_ROOT), "branch": None,
           "target": settings.target, "suite": suite_label(suite), "shard": None, "started": now_iso(),
           "machine": machine.machine_info(settings.target), "versions": machine.package_versions(),
           "measurement": dict(settings.measurement(), mode="calibrate", ab_rounds=request.ab_rounds)}
    run_id = store.create_run(run)
    announce(f"calibration run {run_id}")
    settings.logdir = make_folder(LOG_ROOT / safe_name(run_id), "worker log folder")
    with tempfile.TemporaryDirectory(prefix="perfbot-calibrate-") as work, \
            make_display(len(rows), quiet=request.quiet) as display:
        settings.workdir = Path(work)
        places = suite_positions(rows)

        def measure(row, placement):
            label = row_label(row)
            display.row_started(label)
            if budget is not None and not budget.allows_another_row():
                skipped = dict(SideResult(error=budget.reason()).as_row(row), wall_s=0.0)
                return skipped, [skipped, skipped]
            started = time.monotonic()
            result, sides = calibrated(row, placement, label)
            if budget is not None:
                budget.row_took(time.monotonic() - started)     # its verify A/B included
            return result, sides

        def calibrated(row, placement, label):
            phase = lambda s, p, label=label: display.phase(label, s, p)  # noqa: E731
            (a, b), _ = measure_row(row, [Side("a", CODE_ROOT), Side("b", CODE_ROOT)], settings,
                                    on_phase=phase, prepare_root=CODE_ROOT, placement=placement)
            result = dict(a)
            if a["status"] == "ok" and b["status"] == "ok":
                found = detectable_change([independent_samples(a)[0], independent_samples(b)[0]],
                                          rounds=request.ab_rounds)
                result["detectable_pct"] = found.detectable_pct
                result["calibration"] = {
                    "spread_pct": round(found.spread_pct, 4), "spread_bound_pct": round(found.spread_bound_pct, 4),
                    "processes": found.processes,
                    "ab_rounds": found.rounds, "simulated_false_alarm": found.false_alarm,
                    "aa_diff_pct": round((b["rate"] - a["rate"]) / a["rate"] * 100.0, 4)}
                if request.verify and found.detectable_pct is not None:
                    result["calibration"]["verify"] = _verify(row, settings, request, found.detectable_pct,
                                                              phase, placement.again(row_key(row) + "-verify"))
            elif b["status"] != "ok" and a["status"] == "ok":
                result.update(status="error", error=f"second side: {b.get('error')}")
            return result, [a, b]

        def record(row, measured):
            result, sides = measured
            store.add_row(run_id, result, places[key_of(row)] if pool else None)
            display.row_finished(row_label(row), sides, ["a", "b"])

        measure_rows(rows, pool, True, measure, record,
                     store.row_costs(settings.target) if pool else None)
    store.finish_run(run_id)
    note = keep_logs_note(settings.logdir)
    if note:
        announce(note)
    return run_id


def _verify(row, settings: Settings, request: CalibrateRequest, pct: float, phase,
            placement: RowPlacement) -> dict:
    """An A/B of ``ab_rounds`` rounds whose head is slowed by ``pct``: is it caught?"""
    from bot.compare.measurement import independent_samples
    from scipy.stats import mannwhitneyu

    from bot.runner.delay import min_runs

    check = dataclasses.replace(settings, rounds=request.ab_rounds, min_runs=min_runs(pct))
    (base, head), _ = measure_row(row, [Side("base", CODE_ROOT), Side("head", CODE_ROOT, inject_pct=pct)],
                                  check, on_phase=phase, prepare_root=CODE_ROOT, placement=placement)
    if base["status"] != "ok" or head["status"] != "ok":
        return {"injected_pct": pct, "error": base.get("error") or head.get("error")}
    old, new = independent_samples(base)[0], independent_samples(head)[0]
    p = float(mannwhitneyu(new, old, alternative="less").pvalue)
    diff = (statistics.median(new) - statistics.median(old)) / statistics.median(old) * 100.0
    actual = (head.get("sampling") or {}).get("injected_pct") or [pct]
    return {"injected_pct": round(statistics.median(actual), 4), "diff_pct": round(diff, 4),
            "p_value": p, "caught": bool(p < 0.01 and diff < 0)}
