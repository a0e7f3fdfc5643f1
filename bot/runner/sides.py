"""Measuring one suite row on one or more sides (one side for ``perfbot run``, base and head for
``perfbot ab``), each side in its own worker process running its own revision's code.

The steps a row goes through: build (model file and seeded feeds), compile on every side, then
rounds in which every side in turn warms up and takes its timed samples, and last the accuracy
check against ONNX Runtime. With a fresh worker per round, a round opens by compiling every
side's new worker (side by side on the gpu target), and only then does any side measure. The order
within a round alternates ABBA (base, head; head, base; ...) so that neither side always measures
first, and slow drift of the machine hits both alike. After ``rounds`` rounds, ``decide`` (A/B)
says whether the comparison is settled; more rounds follow until it is or ``max_rounds`` is
reached. A side that fails stops there with a one-line reason; the other sides go on.

Every worker process is one *block*: its samples share its own speed (memory layout, plans it
chose), so they are not independent draws. Each sample records its block, and the row's rate is
the median of its blocks' medians.
"""
from __future__ import annotations

import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bot.runner.accuracy import DEFAULT_TOLERANCE
from bot.runner.devices import Device
from bot.runner.placement import SINGLE, RowPlacement
from bot.runner.session import RowFailure, WorkerSession


@dataclass
class Side:
    label: str                     # "run", "base" or "head"
    code_root: Path                # PYTHONPATH of its workers: the revision whose code is measured
    unavailable: str | None = None  # why this side cannot measure anything at all
    inject_pct: float = 0.0        # calibration only: every run slowed by this share


@dataclass
class Settings:
    target: str
    repeats: int = 10
    warmup: int = 3
    timeout: float = 600.0
    seed: int = 0
    manifest: str | None = None
    rounds: int = 1
    max_rounds: int = 0            # with ``decide``: rounds at most (0: just ``rounds``)
    min_sample_s: float = 0.05     # a sample lasts at least this long (autorange)
    min_runs: int = 1              # runs per sample at least (calibration's injected slowdown)
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
    # The measuring code's root (bot/): workers import the runner from here and the compiler
    # from their side's code root, so both sides of an A/B are timed by the same instrument.
    tool_root: Path | None = None
    # After the accuracy check, time each instruction of the row's program (a profiling replay,
    # not a sample), so that base and head can be diffed kernel by kernel.
    profile: bool = False

    def measurement(self) -> dict:
        """How a run's figures are taken, recorded with the run so that ``compare`` can tell
        runs measured differently apart."""
        from bot.runner.bench import RATE_METHODS

        return {"rate": RATE_METHODS.get(self.target, "host"), "sample": "autorange",
                "min_sample_s": self.min_sample_s, "repeats": self.repeats,
                "rounds": self.rounds, "worker_per_round": self.worker_per_round}


@dataclass
class SideResult:
    samples: list[float] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)       # the worker process of each sample
    devices: list = field(default_factory=list)           # the GPU of each sample (--devices)
    conditions: list = field(default_factory=list)        # the GPU's state after each sample
    e2e_samples: list[float] = field(default_factory=list)
    methods: set = field(default_factory=set)
    runs_per_sample: list[int] = field(default_factory=list)  # per measuring round
    unsettled: int = 0                                    # rounds whose warm-up never settled
    processes: int = 0                                    # worker processes started
    tuned_processes: int = 0                              # replaced unmeasured: their compile tuned
    spare: "SpareWorker | None" = None                    # the next round's worker, starting
    injected: list[float] = field(default_factory=list)   # calibration: slowdown per round, %
    compile_samples: list[float] = field(default_factory=list)  # per worker process
    # Wall seconds the runner spent on this side, by step (start, build, compile, measure,
    # accuracy, profile): where an A/B's time goes. The shared build is counted on every side.
    steps_s: dict = field(default_factory=dict)
    peaks: dict = field(default_factory=dict)                   # worker process -> its peak
    accuracy: dict | None = None
    profile: list | None = None      # time per instruction (settings.profile)
    error: str | None = None
    session: WorkerSession | None = None
    measured: bool = False          # the current session has measured (a fresh one has not)

    @property
    def compile_s(self) -> float | None:
        """The first compile's time (a fresh worker per round compiles again)."""
        return self.compile_samples[0] if self.compile_samples else None

    @property
    def peak_mem_bytes(self) -> int | None:
        """The highest peak of the row's worker processes."""
        return max(self.peaks.values()) if self.peaks else None

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

    def drop_spare(self) -> None:
        if self.spare is not None:
            self.spare.discard()
            self.spare = None

    @contextmanager
    def step(self, name: str):
        """Adds the wall time of the enclosed step to ``steps_s[name]``."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.steps_s[name] = self.steps_s.get(name, 0.0) + time.monotonic() - started

    def note_peak(self, value) -> None:
        if value is not None:
            self.peaks[self.processes] = max(int(value), self.peaks.get(self.processes, 0))

    def take(self, reply: dict, device: Device | None = None) -> None:
        """One measuring round's answer from the current worker (on ``device``)."""
        samples = [float(s) for s in reply.get("samples") or []]
        self.samples.extend(samples)
        self.blocks.extend([self.processes - 1] * len(samples))
        self.devices.extend([device.record() if device else None] * len(samples))
        states = reply.get("conditions")
        self.conditions.extend(states if isinstance(states, list) and len(states) == len(samples)
                               else [None] * len(samples))
        self.e2e_samples.extend(float(s) for s in reply.get("e2e_samples") or [])
        self.methods.add(reply.get("method") or "unknown")
        if reply.get("runs_per_sample"):
            self.runs_per_sample.append(int(reply["runs_per_sample"]))
        self.unsettled += reply.get("settled") is False
        if reply.get("injected_pct") is not None:
            self.injected.append(float(reply["injected_pct"]))
        self.note_peak(reply.get("peak_mem_bytes"))

    def as_row(self, row) -> dict:
        from bot.runner.gpu_state import spoiled

        out = {"name": row.name, "batch": int(row.batch), "mode": row.mode,
               "status": "error" if self.error else "ok", "error": self.error,
               "rate": block_median(self.samples, self.blocks), "samples": list(self.samples),
               "compile_s": self.compile_s, "peak_mem_bytes": self.peak_mem_bytes,
               "accuracy": self.accuracy, "blocks": list(self.blocks),
               "e2e_rate": statistics.median(self.e2e_samples) if self.e2e_samples else None}
        if self.e2e_samples:
            out["e2e_samples"] = list(self.e2e_samples)
        if self.compile_samples:
            out["compile_samples"] = list(self.compile_samples)
        if self.peaks:
            out["peak_mem_samples"] = list(self.peaks.values())
        if any(self.conditions):
            out["conditions"] = list(self.conditions)
        if any(self.devices):
            out["devices"] = list(self.devices)
        out["unreliable"] = spoiled(self.conditions)
        out["sampling"] = {"method": "+".join(sorted(self.methods)) or None,
                           "runs_per_sample": self.runs_per_sample, "unsettled_rounds": self.unsettled,
                           "steps_s": {k: round(v, 3) for k, v in self.steps_s.items()}}
        if self.tuned_processes:
            out["sampling"]["tuned_processes"] = self.tuned_processes
        if self.injected:
            out["sampling"]["injected_pct"] = self.injected
        if self.profile is not None:
            out["profile"] = self.profile
        return out


def block_median(samples: list[float], blocks: list[int]) -> float | None:
    """The median of the blocks' medians: each worker process counts once, however many
    samples it took."""
    if not samples:
        return None
    if len(blocks) != len(samples):
        return statistics.median(samples)
    by_block: dict[int, list[float]] = {}
    for value, block in zip(samples, blocks):
        by_block.setdefault(block, []).append(value)
    return statistics.median(statistics.median(v) for v in by_block.values())


def measuring_cpu() -> int | None:
    """The CPU a gpu worker's measuring thread is pinned to: the highest this runner may use."""
    import os

    return max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


class SpareWorker:
    """A gpu worker process for a side's next round, launched while this round's workers
    compile and ready (its interpreter and libraries loaded) before any side measures, so that a
    fresh process per round costs its compile, not its start-up, and no start-up runs beside a
    measurement. (Spares once started while the other side measured; the batch-1 LSTM's
    processes then ran at two speeds 3 % apart, spread 1.8 %. Moving the start did not change
    that: 1.66 % after, on the same H100, benchmarks/RESULTS.md section 6.) It keeps off the
    CPUs measuring workers are pinned to (``worker.one_cpu``; one per device with ``--devices``).
    Host targets have none: a start-up beside a host compile would take the CPUs it is timed on
    (``cpu_state``)."""

    def __init__(self, session: WorkerSession, measuring_cpus: set[int] | None = None):
        import os

        self.session = session
        cpus = None
        keep_off = measuring_cpus or ({measuring_cpu()} if measuring_cpu() is not None else set())
        if keep_off:
            cpus = (os.sched_getaffinity(0) - keep_off) or None
        self.error: RowFailure | None = None
        try:
            session.launch(cpus)
        except OSError as exc:
            self.error = RowFailure(f"cannot start a worker: {exc}")

    def ready(self, timeout: float) -> None:
        """Wait for the worker's hello (once); a failure is kept for ``take`` to raise."""
        if self.error is not None or self.session.hello:
            return
        try:
            self.session.await_hello(timeout)
        except RowFailure as exc:
            self.session.close()
            self.error = exc

    def take(self, timeout: float) -> WorkerSession:
        """The started session (waiting for its hello if need be), or RowFailure."""
        self.ready(timeout)
        if self.error is not None:
            raise self.error
        return self.session

    def discard(self) -> None:
        self.session.busy = True  # never asked anything: killed at once, not waited for
        self.session.close()


# Called as on_phase(side_label, phase) so the display can show where each row is.
PhaseCallback = Callable[[str, str], None]
# Given the per-side results so far, says whether the comparison is settled (no more rounds).
DecideCallback = Callable[[list[SideResult]], bool]
# Whether the row, as measured, wants its instructions profiled (an A/B: only a flagged row's
# details show where the time moved); without one every row is profiled when settings.profile.
ExplainCallback = Callable[[list[SideResult]], bool]


def tolerance(row) -> tuple[float, float]:
    rtol, atol = DEFAULT_TOLERANCE.get(row.mode, DEFAULT_TOLERANCE["fp32"])
    rtol = rtol if getattr(row, "rtol", None) is None else float(row.rtol)
    atol = atol if getattr(row, "atol", None) is None else float(row.atol)
    return rtol, atol


def row_key(row) -> str:
    """A file-name-safe label for a row's scratch files and logs."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{row.name}-b{row.batch}-{row.mode}")


def measure_row(row, sides: list[Side], settings: Settings, on_phase: PhaseCallback,
                prepare_root: Path | None = None, decide: DecideCallback | None = None,
                placement: RowPlacement = SINGLE,
                explain: ExplainCallback | None = None) -> tuple[list[dict], bool]:
    """Measure ``row`` on every side; the results rows (one per side) and whether it took more
    than the planned rounds.

    ``prepare_root``: build the model and feeds once in a worker of that code root and hand the
    same files to every side (A/B); without it each side builds them itself (one side only).
    ``placement``: the GPU of each round (``--devices``); every side of a round shares it.
    """
    results = [SideResult() for _ in sides]
    remeasured = False
    started = time.monotonic()
    try:
        with placement.whole_row():
            remeasured = _measure_rounds(row, sides, results, settings, on_phase, prepare_root,
                                         decide, placement, explain)
    except RowFailure as exc:  # the shared build failed: every side fails alike
        for result in results:
            result.fail(str(exc))
    finally:
        for result in results:
            result.drop_spare()
            result.stop()
    if not any(r.error for r in results):
        for log in settings.logdir.glob(f"{row_key(row)}-*.log"):
            log.unlink(missing_ok=True)  # only a failed row's worker output is worth keeping
    # The row's own time (all its sides): the next run with --devices schedules longest first.
    took = round(time.monotonic() - started, 3)
    return [dict(r.as_row(row), wall_s=took) for r in results], remeasured


def _measure_rounds(row, sides: list[Side], results: list[SideResult], settings: Settings,
                    on_phase: PhaseCallback, prepare_root: Path | None, decide: DecideCallback | None,
                    placement: RowPlacement, explain: ExplainCallback | None = None) -> bool:
    """Compile, the rounds, the accuracy check, each on its round's device; whether rounds beyond
    the planned ones were taken."""
    prepared = None
    if prepare_root:
        started = time.monotonic()
        prepared = _prepare_shared(row, settings, prepare_root, on_phase)
        for result in results:
            result.steps_s["build"] = time.monotonic() - started
    runs: dict = {}  # the runs per sample the row's first measurement found: all use it
    index, remeasured = 0, False
    while index < settings.rounds or (
            decide is not None and index < settings.max_rounds
            and all(r.alive for r in results) and not decide(results)):
        remeasured = index >= settings.rounds
        with placement.hold(index) as device:
            if index == 0:
                for side, result in zip(sides, results):
                    _start_and_compile(row, side, result, settings, prepared, on_phase, device)
            _round(row, sides, results, settings, index, prepared, on_phase, runs,
                   Where(device, placement.device_for(index + 1), placement.measuring_cpus))
        index += 1
    profile = settings.profile and (explain is None or explain(results))
    with placement.hold(index - 1):  # the last round's workers check their outputs there
        for side, result in zip(sides, results):
            _accuracy(row, side, result, settings)
            if profile:
                _profile(row, result, settings)
    return remeasured


@dataclass
class Where:
    """The device a round runs on, the next round's (its spare workers start meanwhile), and
    the CPUs measuring threads are pinned to (spares keep off them)."""
    device: Device | None = None
    next_device: Device | None = None
    measuring_cpus: set = field(default_factory=set)

    @property
    def cpu(self) -> int | None:
        if self.device is not None and self.device.cpu is not None:
            return self.device.cpu
        return measuring_cpu()


def keep_logs_note(logdir: Path) -> str | None:
    """Where the failed rows' worker logs are; None (and the folder removed) when there are none."""
    if any(logdir.glob("*.log")):
        return f"worker logs of failed rows: {logdir}"
    try:
        logdir.rmdir()
    except OSError:
        pass
    return None


def _session(row, label: str, code_root: Path, settings: Settings, on_phase: PhaseCallback,
             device: Device | None = None) -> WorkerSession:
    log = settings.logdir / f"{row_key(row)}-{label}.log"
    return WorkerSession(code_root, log, on_phase=lambda phase: on_phase(label, phase),
                         tool_root=settings.tool_root, env=device.env() if device else None)


def _prepare_command(row, settings: Settings) -> dict:
    feeds = settings.workdir / f"{row_key(row)}-feeds.npz"
    return {"cmd": "prepare", "row": row.name, "batch": int(row.batch), "mode": row.mode,
            "manifest": settings.manifest, "seed": settings.seed, "feeds_path": str(feeds)}


def _prepare_shared(row, settings: Settings, code_root: Path, on_phase: PhaseCallback) -> dict:
    with _session(row, "build", code_root, settings, on_phase) as session:
        session.start(settings.timeout)
        return session.request(_prepare_command(row, settings), settings.timeout)


def _start_and_compile(row, side: Side, result: SideResult, settings: Settings, prepared: dict | None,
                       on_phase: PhaseCallback, device: Device | None = None) -> None:
    """The side's first worker, with the row compiled. A compile that tuned (timed choices and
    kept them in the compiler's cache, ``compiler.tuning``) leaves its process slower than the
    ones that read those choices: timing runs the candidates' step functions eagerly, and on the
    GPU any eager run of a program's steps beyond its first left that process's CUDA-graph
    replays 8-11 % slower for its life (benchmarks/RESULTS.md, section 6). That worker is
    replaced, once, by a fresh one that compiles from the cache. Its samples would have been the
    side's first block, skewing the side whose compile came first in an A/B on an empty cache
    (2.4-10 % slower at batch 1 on an H100). A worker's profile, which runs the steps eagerly,
    comes after its samples."""
    files = _start(row, side, result, settings, prepared, on_phase, device)
    if files is not None and _compile(row, result, settings, files) and result.alive:
        result.stop()
        result.tuned_processes += 1
        files = _start(row, side, result, settings, prepared, on_phase, device)
        if files is not None:
            _compile(row, result, settings, files)


def _start(row, side: Side, result: SideResult, settings: Settings, prepared: dict | None,
           on_phase: PhaseCallback, device: Device | None = None) -> dict | None:
    """A new worker for the side (its spare if one is starting), on the calling thread: the
    worker ends with the thread that launched it (``WorkerSession.launch``). The row's files,
    or None when the side failed."""
    if side.unavailable:
        result.fail(side.unavailable)
        return None
    spare, result.spare = result.spare, None
    result.processes += 1
    try:
        with result.step("start"):
            if spare is not None:
                result.session = spare.take(settings.timeout)
                result.session.on_phase = lambda phase: on_phase(side.label, phase)
            else:
                result.session = _session(row, side.label, side.code_root, settings, on_phase, device)
                result.session.start(settings.timeout)
        with result.step("build"):
            return prepared or result.session.request(_prepare_command(row, settings), settings.timeout)
    except RowFailure as exc:
        result.fail(str(exc))
        return None


def _compile(row, result: SideResult, settings: Settings, files: dict) -> bool:
    """Compiles the row in the side's worker; whether the compile tuned, or may have (a compiler
    older than its tuning counter says None: its worker is replaced as if it had). False on failure."""
    try:
        with result.step("compile"):
            reply = result.session.request(
                {"cmd": "compile", "row": row.name, "model_path": files["model_path"],
                 "feeds_path": files["feeds_path"], "batch": int(row.batch),
                 "target": settings.target, "fp16": row.mode == "fp16"}, settings.timeout)
        if isinstance(reply.get("compile_s"), (int, float)):
            result.compile_samples.append(float(reply["compile_s"]))
        result.note_peak(reply.get("peak_mem_bytes"))
    except RowFailure as exc:
        result.fail(str(exc))
        return False
    tuned = reply.get("tuned")
    return tuned is None or (isinstance(tuned, int) and tuned > 0)


def _round(row, sides: list[Side], results: list[SideResult], settings: Settings, index: int,
           prepared: dict | None, on_phase: PhaseCallback, runs: dict | None = None,
           where: Where | None = None) -> None:
    """One round: every side measures once, in ABBA order (reversed on odd rounds); the host-fed
    end-to-end figure, a second figure that no comparison rests on, only in the first (its own
    warm-up and samples took up to a second more of every round). ``runs``
    holds the runs per sample once the row's first measurement has found it (autorange): every
    later sample of the row, on either side, holds as many (``sampling.take_samples``). ``where``:
    the round's device (both sides measure on it) and the next round's."""
    runs = {} if runs is None else runs
    where = where or Where()
    order = list(zip(sides, results))
    if index % 2:
        order.reverse()
    if settings.worker_per_round:
        _fresh_workers(row, order, settings, prepared, on_phase, where)
    for side, result in order:
        if not result.alive:
            continue
        own = [r.session.hello.get("pid") for r in results if r.session is not None]
        try:
            with result.step("measure"):
                reply = result.session.request(
                    {"cmd": "measure", "row": row.name, "warmup": settings.warmup,
                     "repeats": settings.repeats, "min_sample_s": settings.min_sample_s,
                     "own_pids": [p for p in own if isinstance(p, int)], "runs": runs.get("n"),
                     "cpu": where.cpu, "e2e": index == 0,
                     "min_runs": settings.min_runs, "inject_pct": side.inject_pct}, settings.timeout)
            result.take(reply, where.device)
            if reply.get("runs_per_sample"):
                runs.setdefault("n", int(reply["runs_per_sample"]))
            result.measured = True
        except RowFailure as exc:
            result.fail(str(exc))


def compiles_side_by_side(settings: Settings) -> bool:
    """Whether a round's fresh workers compile at once (see ``_fresh_workers``)."""
    return settings.target == "gpu"


def starts_spares(settings: Settings) -> bool:
    """Whether each side's next worker starts ahead, during a round's compiles (``SpareWorker``)."""
    return settings.worker_per_round and settings.target == "gpu"


def _fresh_workers(row, order: list, settings: Settings, prepared: dict | None,
                   on_phase: PhaseCallback, where: Where) -> None:
    """Every side that has measured gets a new process with the row compiled again, before any
    side of the round measures. On the gpu target the sides compile side by side: nothing is
    timed meanwhile, and the first round's compiles, one after the other, have made the choices
    a compile times (``conv_choice``) and kept them in the compiler's cache (on by default).
    Compiles were 271 of the 526 s that an A/B of eight suite rows took one after the other; side
    by side, three of those rows took 113 s against 144 s (2026-12-05, H200). Host targets
    compile one after the other, on the CPUs they are timed on. Each side's worker for the round
    after is launched as these compile, and has loaded before any side measures (``SpareWorker``)."""
    due = [(side, result) for side, result in order if result.alive and result.measured]
    for _side, result in due:
        result.stop()
        result.measured = False
    # started here, on the runner's thread, which the workers must not outlive
    started = [(result, _start(row, side, result, settings, prepared, on_phase, where.device))
               for side, result in due]
    if starts_spares(settings):
        _start_spares([(side, result) for side, result in due if result.alive], row, settings, where)
    compiles = [(result, files) for result, files in started if files is not None]
    if not compiles_side_by_side(settings) or len(compiles) < 2:
        for result, files in compiles:
            _compile(row, result, settings, files)
    else:
        with ThreadPoolExecutor(max_workers=len(compiles), thread_name_prefix="perfbot-compile") as pool:
            futures = [pool.submit(_compile, row, result, settings, files) for result, files in compiles]
            for future in futures:
                future.result()  # a bug in one side's compile is raised here, not lost
    for _side, result in due:
        if result.spare is not None:
            result.spare.ready(settings.timeout)    # no start-up runs beside a measurement


def _start_spares(due: list, row, settings: Settings, where: Where) -> None:
    """Each side's worker for the next round, launched now (on the runner's thread)."""
    for side, result in due:
        if result.spare is None:
            result.spare = SpareWorker(_session(row, side.label, side.code_root, settings,
                                                lambda _label, _phase: None, where.next_device),
                                       measuring_cpus=where.measuring_cpus)


def _accuracy(row, side: Side, result: SideResult, settings: Settings) -> None:
    if not result.alive:
        return
    rtol, atol = tolerance(row)
    reference = settings.workdir / f"{row_key(row)}-reference.npz"
    try:
        with result.step("accuracy"):
            reply = result.session.request(
                {"cmd": "accuracy", "row": row.name, "rtol": rtol, "atol": atol,
                 "reference_path": str(reference)}, settings.timeout)
    except RowFailure as exc:
        result.fail(f"accuracy check failed: {exc}")
        return
    result.accuracy = reply.get("accuracy")
    if reply.get("problem"):  # NaN/Inf or mismatched outputs: the numbers cannot be trusted
        result.fail(reply["problem"])


def _profile(row, result: SideResult, settings: Settings) -> None:
    """The last worker's time per instruction; a failure leaves the row's figures alone."""
    if not result.alive:
        return
    try:
        with result.step("profile"):
            reply = result.session.request({"cmd": "profile", "row": row.name, "runs": 3},
                                           settings.timeout)
    except RowFailure:
        result.stop()  # the measurement stands; only its breakdown is missing
        return
    found = reply.get("profile")
    result.profile = found if isinstance(found, list) else None
