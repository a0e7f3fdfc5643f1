"""Measuring one suite row on one or more sides (one side for ``perfbot run``, base and head for
``perfbot ab``), each side in its own worker process running its own revision's code.

The steps a row goes through: build (model file and seeded feeds), compile on every side, then K
rounds in which every side in turn warms up and takes its timed repeats (ABAB…, so that slow
drift of the machine hits both sides alike), optional extra rounds for a suspected regression,
and last the accuracy check against ONNX Runtime. A side that fails stops there with a one-line
reason; the other sides go on.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bot.runner.accuracy import DEFAULT_TOLERANCE
from bot.runner.session import RowFailure, WorkerSession


@dataclass
class Side:
    label: str                     # "run", "base" or "head"
    code_root: Path                # PYTHONPATH of its workers: the revision whose code is measured
    unavailable: str | None = None  # why this side cannot measure anything at all


@dataclass
class Settings:
    target: str
    repeats: int = 10
    warmup: int = 3
    timeout: float = 600.0
    seed: int = 0
    manifest: str | None = None
    rounds: int = 1
    extra_rounds: int = 0          # rounds added when ``suspect`` says a row looks regressed
    # Each round in fresh worker processes (compiled again): a process's own speed (its memory
    # layout, the plans it autotuned) stays with it for all its rounds, so samples of one process
    # understate how far another process of the same code lands. On the 2-core development
    # machine, one revision against itself with one worker per side gave medians -31 % and +39 %
    # apart on single rows, and against a commit with no change to that row 🔴 at p = 8e-23;
    # with ten one-sample rounds in fresh workers, twice against itself: all rows within
    # -4.6..+11.9 %, none flagged.
    worker_per_round: bool = False
    workdir: Path = Path(".")      # per-run scratch space: feeds, reference outputs
    logdir: Path = Path(".")       # worker stderr logs; those of failed rows are kept


@dataclass
class SideResult:
    samples: list[float] = field(default_factory=list)
    compile_s: float | None = None
    peak_mem_bytes: int | None = None
    accuracy: dict | None = None
    error: str | None = None
    session: WorkerSession | None = None
    measured: bool = False          # the current session has measured (a fresh one has not)

    @property
    def alive(self) -> bool:
        return self.error is None and self.session is not None

    def fail(self, reason: str) -> None:
        self.error = self.error or reason
        self.stop()

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def note_peak(self, value) -> None:
        if value is not None:
            self.peak_mem_bytes = max(int(value), self.peak_mem_bytes or 0)

    def as_row(self, row) -> dict:
        return {"name": row.name, "batch": int(row.batch), "mode": row.mode,
                "status": "error" if self.error else "ok", "error": self.error,
                "rate": statistics.median(self.samples) if self.samples else None,
                "samples": list(self.samples), "compile_s": self.compile_s,
                "peak_mem_bytes": self.peak_mem_bytes, "accuracy": self.accuracy}


# Called as on_phase(side_label, phase) so the display can show where each row is.
PhaseCallback = Callable[[str, str], None]
# Given the per-side results after the planned rounds, says whether to measure more.
SuspectCallback = Callable[[list[SideResult]], bool]


def tolerance(row) -> tuple[float, float]:
    rtol, atol = DEFAULT_TOLERANCE.get(row.mode, DEFAULT_TOLERANCE["fp32"])
    rtol = rtol if getattr(row, "rtol", None) is None else float(row.rtol)
    atol = atol if getattr(row, "atol", None) is None else float(row.atol)
    return rtol, atol


def row_key(row) -> str:
    """A file-name-safe label for a row's scratch files and logs."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{row.name}-b{row.batch}-{row.mode}")


def measure_row(row, sides: list[Side], settings: Settings, on_phase: PhaseCallback,
                prepare_root: Path | None = None, suspect: SuspectCallback | None = None
                ) -> tuple[list[dict], bool]:
    """Measure ``row`` on every side; the results rows (one per side) and whether it was re-measured.

    ``prepare_root``: build the model and feeds once in a worker of that code root and hand the
    same files to every side (A/B); without it each side builds them itself (one side only).
    """
    results = [SideResult() for _ in sides]
    remeasured = False
    try:
        prepared = _prepare_shared(row, settings, prepare_root, on_phase) if prepare_root else None
        for side, result in zip(sides, results):
            _start_and_compile(row, side, result, settings, prepared, on_phase)
        _rounds(row, sides, results, settings, settings.rounds, prepared, on_phase)
        if settings.extra_rounds and suspect is not None and all(r.alive for r in results) \
                and suspect(results):
            _rounds(row, sides, results, settings, settings.extra_rounds, prepared, on_phase)
            remeasured = True
        for side, result in zip(sides, results):
            _accuracy(row, side, result, settings)
    except RowFailure as exc:  # the shared build failed: every side fails alike
        for result in results:
            result.fail(str(exc))
    finally:
        for result in results:
            result.stop()
    if not any(r.error for r in results):
        for log in settings.logdir.glob(f"{row_key(row)}-*.log"):
            log.unlink(missing_ok=True)  # only a failed row's worker output is worth keeping
    return [r.as_row(row) for r in results], remeasured


def keep_logs_note(logdir: Path) -> str | None:
    """Where the failed rows' worker logs are; None (and the folder removed) when there are none."""
    if any(logdir.glob("*.log")):
        return f"worker logs of failed rows: {logdir}"
    try:
        logdir.rmdir()
    except OSError:
        pass
    return None


def _session(row, label: str, code_root: Path, settings: Settings, on_phase: PhaseCallback) -> WorkerSession:
    log = settings.logdir / f"{row_key(row)}-{label}.log"
    return WorkerSession(code_root, log, on_phase=lambda phase: on_phase(label, phase))


def _prepare_command(row, settings: Settings) -> dict:
    feeds = settings.workdir / f"{row_key(row)}-feeds.npz"
    return {"cmd": "prepare", "row": row.name, "batch": int(row.batch), "mode": row.mode,
            "manifest": settings.manifest, "seed": settings.seed, "feeds_path": str(feeds)}


def _prepare_shared(row, settings: Settings, code_root: Path, on_phase: PhaseCallback) -> dict:
    with _session(row, "build", code_root, settings, on_phase) as session:
        session.start(settings.timeout)
        return session.request(_prepare_command(row, settings), settings.timeout)


def _start_and_compile(row, side: Side, result: SideResult, settings: Settings, prepared: dict | None,
                       on_phase: PhaseCallback) -> None:
    if side.unavailable:
        result.fail(side.unavailable)
        return
    result.session = _session(row, side.label, side.code_root, settings, on_phase)
    try:
        result.session.start(settings.timeout)
        files = prepared or result.session.request(_prepare_command(row, settings), settings.timeout)
        reply = result.session.request(
            {"cmd": "compile", "row": row.name, "model_path": files["model_path"],
             "feeds_path": files["feeds_path"], "batch": int(row.batch), "target": settings.target,
             "fp16": row.mode == "fp16"}, settings.timeout)
        if result.compile_s is None:  # a fresh worker per round: the first compile is reported
            result.compile_s = reply.get("compile_s")
        result.note_peak(reply.get("peak_mem_bytes"))
    except RowFailure as exc:
        result.fail(str(exc))


def _rounds(row, sides: list[Side], results: list[SideResult], settings: Settings, rounds: int,
            prepared: dict | None, on_phase: PhaseCallback) -> None:
    for _ in range(rounds):
        for side, result in zip(sides, results):
            if result.alive and settings.worker_per_round and result.measured:
                result.stop()  # a new process with the row compiled again
                result.measured = False
                _start_and_compile(row, side, result, settings, prepared, on_phase)
            if not result.alive:
                continue
            try:
                reply = result.session.request(
                    {"cmd": "measure", "row": row.name, "warmup": settings.warmup,
                     "repeats": settings.repeats}, settings.timeout)
                result.samples.extend(float(s) for s in reply.get("samples") or [])
                result.note_peak(reply.get("peak_mem_bytes"))
                result.measured = True
            except RowFailure as exc:
                result.fail(str(exc))


def _accuracy(row, side: Side, result: SideResult, settings: Settings) -> None:
    if not result.alive:
        return
    rtol, atol = tolerance(row)
    reference = settings.workdir / f"{row_key(row)}-reference.npz"
    try:
        reply = result.session.request(
            {"cmd": "accuracy", "row": row.name, "rtol": rtol, "atol": atol,
             "reference_path": str(reference)}, settings.timeout)
    except RowFailure as exc:
        result.fail(f"accuracy check failed: {exc}")
        return
    result.accuracy = reply.get("accuracy")
    if reply.get("problem"):  # NaN/Inf or mismatched outputs: the numbers cannot be trusted
        result.fail(reply["problem"])
