"""``perfbot run``: measure a suite (or one shard of it) row by row into the results store.

Every row runs in its own worker process; its result is committed to the store as soon as it is
known, so a run killed at any point can be finished with ``--resume RUN_ID``, which skips the
rows already recorded.
"""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import bot
from common.errors import UserError
from bot.outfiles import check_model_cache, make_folder
from bot.runner import machine
from bot.runner.progress import make_display
from bot.runner.schedule import device_pool, key_of, measure_rows, suite_positions
from bot.runner.sides import Settings, Side, keep_logs_note, measure_row
from bot.store.convert import utc_now_iso

CODE_ROOT = Path(bot.__file__).resolve().parent.parent  # the tree this perfbot runs from
LOG_ROOT = Path(".perfbot") / "logs"


@dataclass
class RunRequest:
    suite: str | None = None
    target: str | None = None
    shard: str | None = None
    commit: str | None = None
    branch: str | None = None
    resume: str | None = None
    quiet: bool = False
    settings: Settings = field(default_factory=lambda: Settings(target="cpu"))
    given: dict = field(default_factory=dict)  # measurement flags the user gave (for --resume)
    retry_errors: bool = False  # a resume measures the rows recorded as errors again
    devices: str | None = None  # --devices: GPUs to spread the rows over (None: one, as always)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text!r} must look like I/N, e.g. 2/4") from None
    if count < 1:
        raise UserError(f"--shard {text!r}: the number of shards, {count}, must be at least 1")
    if not 1 <= index <= count:
        raise UserError(f"--shard {text!r}: there is no shard {index} of {count}; shards are numbered "
                        f"1 to {count}")
    return index, count


def select_rows(manifest_path: str | None, suite: str, shard: tuple[int, int] | None) -> list:
    """The suite's rows in manifest order; shard i/N keeps rows i, i+N, i+2N, ... (1-based)."""
    from models.manifest import load_manifest

    rows = load_manifest(path=manifest_path).select(suite)  # a ManifestError is a UserError
    if not rows:
        raise UserError(f"suite {suite!r} selects no rows")
    if shard:
        index, count = shard
        rows = rows[index - 1::count]
    return rows


# A results document keeps a run's suite in at most this many characters (the schema's limit).
SUITE_TEXT_MAX = 200


def suite_label(suite: str) -> str:
    """``suite`` as a results document records it: as given where it fits, else (a long list of
    row names) the count, a digest of the whole list, and as many names as fit, so that two
    different lists never share a label."""
    if len(suite) <= SUITE_TEXT_MAX:
        return suite
    names = suite.split(",")
    head = f"{len(names)} rows {hashlib.sha256(suite.encode()).hexdigest()[:10]}: "
    return head + suite[:SUITE_TEXT_MAX - len(head) - 1] + "…"


def check_resumable_suite(suite: str) -> None:
    """A run records its suite to resume from it: a list of row names too long to record
    cannot be a run's suite (an A/B or a calibration records a label instead)."""
    if len(suite) > SUITE_TEXT_MAX:
        raise UserError(f"--suite lists {len(suite.split(','))} rows in {len(suite)} characters; a run "
                        f"records at most {SUITE_TEXT_MAX} to resume from: name a suite of the "
                        f"manifest, or use --shard")


def row_label(row) -> str:
    return f"{row.name} b{row.batch} {row.mode}"


def now_iso() -> str:
    # The store writes "ended" the same way: one spelling of UTC in a results document.
    return utc_now_iso()


def run_suite(store, request: RunRequest, announce=lambda text: None) -> str:
    """Measure the rows still missing from the run; returns the run id."""
    settings = request.settings
    if request.resume:
        run = _adopt_resumed(store, request)
    else:
        request.suite = request.suite or "smoke"
        check_resumable_suite(request.suite)
        request.target = machine.choose_target(request.target)
        settings.target = request.target
        run = _new_run(request)
        if run["machine"].get("gpu_fallback"):  # slow numbers get their reason up front
            announce(f"gpu target on fallback paths: {run['machine']['gpu_fallback']} (see perfbot doctor)")
    # the selection is checked before a new run is recorded: a typo leaves no empty run behind
    rows = select_rows(settings.manifest, run["suite"], parse_shard(run.get("shard")))
    pool = device_pool(request.devices, run["target"], settings.seed)  # likewise a bad --devices
    make_folder(LOG_ROOT, "worker log folder")  # likewise a place for the workers' logs
    check_model_cache()  # and for the models they build
    run_id = request.resume or store.create_run(run)
    done = _rows_done(store, run_id, request.retry_errors) if request.resume else set()
    announce(f"run {run_id} (finish it after an interruption with --resume {run_id})")
    settings.target = run["target"]
    todo = [r for r in rows if (r.name, int(r.batch), r.mode) not in done]
    settings.logdir = make_folder(LOG_ROOT / safe_name(run_id), "worker log folder")
    side = Side("run", CODE_ROOT)
    with tempfile.TemporaryDirectory(prefix="perfbot-run-") as work, \
            make_display(len(todo), quiet=request.quiet) as display:
        settings.workdir = Path(work)
        places = suite_positions(rows)

        def measure(row, placement):
            label = row_label(row)
            display.row_started(label)
            return measure_row(row, [side], settings, placement=placement,
                               on_phase=lambda s, p, label=label: display.phase(label, s, p))[0]

        def record(row, results):
            # committed now: --resume will not redo it; in the suite's place when rows finish
            # out of order on several devices
            store.add_row(run_id, results[0], places[key_of(row)] if pool else None)
            display.row_finished(row_label(row), results, ["run"])

        measure_rows(todo, pool, settings.worker_per_round, measure, record,
                     store.row_costs(settings.target) if pool else None)
    store.finish_run(run_id)
    note = keep_logs_note(settings.logdir)
    if note:
        announce(note)
    return run_id


def _new_run(request: RunRequest) -> dict:
    commit = machine.check_commit(request.commit) if request.commit else machine.current_commit()
    branch = request.branch if request.branch is not None else machine.current_branch()
    return {"commit": commit, "branch": branch, "target": request.target, "suite": request.suite,
            "shard": request.shard or None, "started": now_iso(),
            "machine": machine.machine_info(request.target), "versions": machine.package_versions(),
            "measurement": dict(request.settings.measurement(), mode="run"),
            "settings": _recorded_settings(request.settings)}


# What a run records of how it measured, so that --resume measures the rest the same way: a row
# of 50 samples beside rows of 600 would not be one run. ``mode`` tells a plain run from an A/B
# side; ``manifest`` lets a custom-manifest run resume without --manifest.
RESUMED_SETTINGS = ("repeats", "warmup", "seed", "rounds", "min_sample_s")


def _recorded_settings(settings: Settings) -> dict:
    manifest = str(Path(settings.manifest).resolve()) if settings.manifest else None
    return {"mode": "run", **{key: getattr(settings, key) for key in RESUMED_SETTINGS},
            "manifest": manifest}


def _adopt_settings(request: RunRequest, recorded: dict | None) -> None:
    """Measure the rest as the run measured its first rows; a flag that says otherwise is
    refused rather than mixed in."""
    if not recorded or recorded.get("mode") != "run":
        raise UserError(f"run {request.resume} records no `perfbot run` settings (an A/B side or "
                        "a run of an older perfbot), so it cannot be resumed")
    given = dict(request.given)
    if given.get("manifest"):
        given["manifest"] = str(Path(given["manifest"]).resolve())
    for key, value in given.items():
        if key in recorded and value != recorded[key]:
            raise UserError(f"--{key} {value} differs from run {request.resume}'s {recorded[key]}; "
                            "leave it out to resume with the run's own")
    for key in (*RESUMED_SETTINGS, "manifest"):
        if key in recorded:
            setattr(request.settings, key, recorded[key])
    request.settings.worker_per_round = request.settings.rounds > 1


def _rows_done(store, run_id: str, retry_errors: bool) -> set:
    """The rows a resume skips: every recorded one, or with ``retry_errors`` the good ones only."""
    if not retry_errors:
        return store.recorded_rows(run_id)
    return {(r["name"], r["batch"], r["mode"]) for r in store.get_run(run_id)["rows"]
            if r["status"] != "error"}


def _adopt_resumed(store, request: RunRequest) -> dict:
    """The stored run's suite, target and shard, checked against any the user gave again."""
    run = store.get_run(request.resume)["run"]
    for flag, given, stored in (("--suite", request.suite, run.get("suite")),
                                ("--target", request.target, run.get("target")),
                                ("--shard", request.shard, run.get("shard"))):
        if given is not None and given != stored:
            raise UserError(f"{flag} {given} differs from run {request.resume}'s {stored}; "
                            f"leave it out to resume with the run's own")
    if not run.get("suite"):
        raise UserError(f"run {request.resume} records no suite, so it cannot be resumed")
    _adopt_settings(request, run.get("settings"))
    machine.choose_target(run["target"])
    return run


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
