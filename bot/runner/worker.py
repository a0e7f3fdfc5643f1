"""The measuring worker: ``python -P -m bot.runner.worker``, one process per suite row (per side
in A/B mode), driven by the parent over the line protocol in ``bot.runner.protocol``.

Commands (one JSON object per line on stdin):
  prepare   {row, manifest, batch, mode, seed, feeds_path} → build the model, write seeded feeds
  compile   {row, model_path, feeds_path, batch, target, fp16} → compile_s, peak_mem_bytes
  measure   {row, warmup, repeats, min_sample_s, runs, min_runs, e2e, own_pids, cpu, inject_pct} → samples
            (inferences/s), the host-fed end-to-end samples (gpu), each sample's GPU state, how
            they were taken; inject_pct (calibration only) slows every run by that share
  accuracy  {row, rtol, atol, reference_path} → accuracy, problem
  profile   {row, runs} → profile: time per instruction of the compiled program (None where the
            side's compiler has no compiler.profiling)
  quit

Whatever goes wrong inside a command is answered with one ``error`` line and the worker keeps
serving; what cannot be answered (a crash, a hang) the parent detects from outside. Everything the
worker or a library prints goes to stderr so that stdout carries protocol lines only.
"""
from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from bot.runner import faults, memory
from bot.runner.arrays import load_arrays, save_arrays
from bot.runner.own_code import confine_to_roots
from bot.runner.protocol import PROTOCOL_VERSION, decode, encode, one_line


# Instructions kept per row, slowest first: all of them for the models seen so far (a 12-layer
# transformer has about 320), so that the diff's launch counts and its appeared/vanished lists
# compare whole profiles (a cut at 200 made nodes under the cut on one side "appear" on the
# other); the schema's cap.
PROFILE_ENTRIES = 1000


class Worker:
    def __init__(self, out):
        self.out = out
        self.phase_name = "start"
        self.row = None
        self.program = None
        self.feeds = None
        self.model_path = None
        self.target = None
        self.batch = 1
        self.timed = None       # the call the last measurement timed

    # ----- protocol -----------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        self.out.write(encode(message))
        self.out.flush()

    def phase(self, name: str) -> None:
        self.phase_name = name
        self.send({"event": "phase", "phase": name})
        faults.maybe_inject(self.row, name)

    def serve(self, commands) -> None:
        import compiler

        preload()
        self.send({"event": "hello", "protocol": PROTOCOL_VERSION, "pid": os.getpid(),
                   "compiler": os.path.dirname(compiler.__file__),
                   "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
        for line in commands:
            message = decode(line)
            if message is None:
                continue
            command = message.get("cmd")
            if command == "quit":
                return
            handler = getattr(self, f"do_{command}", None)
            if handler is None:
                self.send({"event": "error", "error": f"unknown worker command {command!r}"})
                continue
            self.row = message.get("row", self.row)
            try:
                self.send({"event": "done", **handler(message)})
            except Exception as exc:  # every failure becomes this row's one-line reason
                traceback.print_exc(file=sys.stderr)
                self.send({"event": "error", "error": describe(exc, self.phase_name)})

    # ----- commands -----------------------------------------------------------------------------
    def do_prepare(self, msg: dict) -> dict:
        self.phase("build")
        from models.cache import build_model
        from models.inputs import make_feeds
        from models.manifest import load_manifest

        manifest = load_manifest(path=msg.get("manifest"))
        row = find_row(manifest, msg["row"], msg["batch"], msg["mode"])
        model_path = build_model(row)
        feeds = make_feeds(row, model_path, batch=msg["batch"], seed=msg.get("seed", 0))
        save_arrays(msg["feeds_path"], feeds)
        return {"model_path": str(model_path), "feeds_path": msg["feeds_path"]}

    def do_compile(self, msg: dict) -> dict:
        self.phase("compile")
        self.target, self.batch = msg["target"], int(msg["batch"])
        self.model_path = msg["model_path"]
        self.feeds = load_arrays(msg["feeds_path"])
        if self.target == "gpu":
            require_gpu()
        memory.reset_host_peak()  # the host peak covers compile and runs, not model building
        import compiler  # noqa: F401  imported before the clock starts: import time is not compile time

        tuning = _tuning_counter()
        start = time.perf_counter()
        from bot.runner.bench import compile_options

        tuned = tuning.count() if tuning else None
        program = parse_model(self.model_path, self.batch, self.feeds)
        program.compile(targets=self.target, fp16=bool(msg.get("fp16")), **compile_options(self.target))
        compile_s = time.perf_counter() - start
        self.program = program
        self.timed = None
        # None: this compiler cannot say whether its compile tuned (the side then assumes it did)
        return {"compile_s": compile_s, "peak_mem_bytes": self.peak(),
                "tuned": tuning.count() - tuned if tuning else None}

    def do_measure(self, msg: dict) -> dict:
        from bot.runner.bench import RATE_METHODS, device_runner, host_runner
        from bot.runner.cpu_state import CpuWatch
        from bot.runner.gpu_state import GpuWatch
        from bot.runner.machine_speed import HostWatch
        from bot.runner.sampling import SamplingPlan, take_samples
        from bot.runner.timing import HostTimer, timer_for

        self.runner()
        plan = SamplingPlan(min_sample_s=float(msg.get("min_sample_s", 0.05)),
                            repeats=int(msg["repeats"]), min_warmup=max(1, int(msg.get("warmup", 1))))
        gpu = self.target == "gpu"
        run_once = device_runner(self.program, self.feeds) if gpu else host_runner(self.program, self.feeds)
        method = RATE_METHODS[self.target]
        if run_once is None:  # a compiler without device arguments: only the host-fed call
            run_once, method = host_runner(self.program, self.feeds), "host-fed"
        self.timed = run_once
        self.phase("warm-up")
        for _ in range(3):  # eager, recorded, replayed: the timer's probe sees the steady form
            run_once()
        inject_pct = float(msg.get("inject_pct") or 0.0)
        timer = timer_for(self.target, run_once)
        if inject_pct > 0:  # calibration: a known slowdown of this row's own work
            from bot.runner.delay import SlowedTimer

            timer = SlowedTimer(timer, inject_pct)
        # what could spoil a sample: the GPU's state on gpu; elsewhere other work on the CPUs
        # and the machine's own speed
        watch = GpuWatch(own_pids=set(msg.get("own_pids") or ())) if gpu else HostWatch(CpuWatch())
        states: list = []
        self.phase("measure")
        with one_cpu(msg.get("cpu")) if gpu else contextlib.nullcontext():
            sampling = take_samples(timer, plan, on_sample=lambda _i: states.append(
                watch.snapshot()), runs=msg.get("runs"),
                min_runs=int(msg.get("min_runs") or 1))
        reply = {"samples": sampling.rates(self.batch), "method": method,
                 "runs_per_sample": sampling.runs_per_sample, "settled": sampling.settled,
                 "warmup_samples": len(sampling.warmup),
                 "injected_pct": timer.injected_pct(sampling.runs_per_sample) if inject_pct > 0 else None,
                 "conditions": states if watch.available else None}
        if gpu and msg.get("e2e", True) and method == "device" and not inject_pct:
            e2e = take_samples(HostTimer(host_runner(self.program, self.feeds)),
                               SamplingPlan(min_sample_s=plan.min_sample_s, repeats=3, max_warmup_s=1.0))
            reply["e2e_samples"] = e2e.rates(self.batch)
        reply["peak_mem_bytes"] = self.peak()
        return reply

    def do_accuracy(self, msg: dict) -> dict:
        from bot.runner.accuracy import compare_outputs, reference_outputs

        self.runner()
        self.phase("accuracy")
        # The outputs of the very runs that were timed (device buffers on the gpu target), so
        # that accuracy speaks for the measured program and not only for a host-fed call of it.
        run = self.timed or self.runner()
        ours = [to_host(o) for o in run()]
        cached = msg.get("reference_path")
        if cached and os.path.exists(cached):
            reference = load_arrays(cached)
        else:
            reference = reference_outputs(self.model_path, self.feeds)
            if cached:
                save_arrays(cached, reference)  # the other side of an A/B pair reuses it
        result = compare_outputs(ours, reference, float(msg["rtol"]), float(msg["atol"]))
        return {"accuracy": result.as_row(), "problem": result.problem, "notes": result.notes}

    def do_profile(self, msg: dict) -> dict:
        self.runner()
        self.phase("profile")
        try:
            from compiler.profiling import profile
        except ImportError:  # a revision from before the profiling hook
            return {"profile": None}
        entries = profile(self.program, self.feeds, runs=max(1, int(msg.get("runs") or 3)))
        return {"profile": entries[:PROFILE_ENTRIES]}

    # ----- helpers ------------------------------------------------------------------------------
    def runner(self):
        if self.program is None:
            raise RuntimeError("nothing compiled: send compile first")
        program, feeds = self.program, self.feeds
        return lambda: program.run(feeds)

    def peak(self) -> int | None:
        return memory.peak_bytes(self.target, getattr(self.program, "compiled", None))


def preload() -> None:
    """Import the heavy libraries before saying hello: start-up has its own generous time limit,
    so a command's limit measures the command, not a cold import on a busy machine. The compiler's
    parser and op registry are among them: imported by the first compile, they were counted in its
    compile time (about 0.7 s of a fresh gpu worker's 0.9-1.9 s on the H200), and a spare worker
    imports them while the other side measures."""
    import importlib

    for name in ("numpy", "onnx", "onnxruntime", "models.manifest", "models.cache", "models.inputs",
                 "compiler.onnx.parser"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # reported by the command that needs it, with its own message


class one_cpu:
    """Keep the measuring thread on one CPU, the same one in every worker process: a thread that
    the scheduler moves between cores (and caches) mid-sample, or that lands on a busier core in
    one process than in the next, adds host noise to every launch. The runner names the CPU
    (the highest it may use; workers starting meanwhile keep off it); the library threads this
    process started before keep their own."""

    def __init__(self, cpu: int | None):
        self.cpu = cpu

    def __enter__(self):
        self.before = None
        if self.cpu is not None and hasattr(os, "sched_setaffinity"):
            try:
                self.before = os.sched_getaffinity(0)
                os.sched_setaffinity(0, {int(self.cpu)})
            except (OSError, ValueError):
                self.before = None
        return self

    def __exit__(self, *exc):
        if self.before is not None:
            os.sched_setaffinity(0, self.before)


def symbolic_dims(model_path: str, feeds: dict) -> dict[str, int]:
    """Every unknown length of the graph inputs, bound by input and axis (``x:2``) to the size the
    feeds have, and by its symbol where it has one.

    The batch is not always the first dimension (sequence-first RNN inputs), so the feeds, not a
    position, say what each dimension is. Axes are bound one by one because a symbol need not
    name one length: Paddle writes ``?`` (or -1) for every unknown axis."""
    import onnx

    from compiler.onnx.parser import unknown_length
    model = onnx.load(model_path, load_external_data=False)
    dims: dict[str, int] = {}
    for value in model.graph.input:
        feed = feeds.get(value.name)
        if feed is None:
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if axis >= feed.ndim or not unknown_length(dim):
                continue
            dims[f"{value.name}:{axis}"] = int(feed.shape[axis])
            if dim.dim_param:
                dims.setdefault(dim.dim_param, int(feed.shape[axis]))
    return dims


def _tuning_counter():
    """The compiler's count of tuned choices (``compiler.tuning``), or None for a compiler that has
    none: an A/B's base may be older code than the bot that measures it."""
    try:
        from compiler import tuning
    except ImportError:
        return None
    return tuning


def parse_model(model_path: str, batch: int, feeds: dict):
    """``compiler.parse_onnx`` with the batch size, plus the symbolic dimensions bound from the
    feeds where the compiler's parser accepts them (``dims``)."""
    import inspect

    import compiler

    parse = compiler.parse_onnx
    if "dims" not in inspect.signature(parse).parameters:
        try:
            from compiler.onnx.parser import parse_onnx as parse
        except ImportError:
            parse = compiler.parse_onnx
    if "dims" in inspect.signature(parse).parameters:
        return parse(model_path, batch_size=batch, dims=symbolic_dims(model_path, feeds))
    return parse(model_path, batch_size=batch)


def find_row(manifest, name: str, batch: int, mode: str):
    for row in manifest.select(name):
        if row.name == name and int(row.batch) == int(batch) and row.mode == mode:
            return row
    raise LookupError(f"the manifest has no row {name} (batch {batch}, {mode})")


def require_gpu() -> None:
    try:
        import cupy

        usable = cupy.cuda.is_available()
    except Exception as exc:
        raise RuntimeError(f"the gpu target needs CuPy and a CUDA device ({one_line(exc, 120)})") from None
    if not usable:
        raise RuntimeError("the gpu target needs a CUDA device and none is usable")


def to_host(value):
    """Outputs are host arrays with offload_copy; a device array is copied back to be safe."""
    get = getattr(value, "get", None)
    return get() if callable(get) and not hasattr(value, "__array_interface__") else value


def describe(exc: BaseException, phase: str) -> str:
    """The one-line reason a row failed."""
    from common.errors import UserError

    name = type(exc).__name__
    if isinstance(exc, UserError):
        return one_line(str(exc))
    if isinstance(exc, MemoryError) or "OutOfMemory" in name:
        device = "GPU" if "cuda" in type(exc).__module__ or "cupy" in type(exc).__module__ else "host"
        return one_line(f"{device} out of memory during {phase}: {exc}")
    if name == "DecodeError":  # protobuf's: the row's .onnx file is not a model
        return one_line(f"the model file is not valid ONNX (truncated or corrupt?) during {phase}: {exc}")
    return one_line(f"{name} during {phase}: {exc}")


def claim_stdout():
    """Keep the real stdout for protocol lines and point fd 1 at stderr for everything else."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def die_with_parent() -> None:
    """Ask Linux to kill this worker when the parent dies, even by kill -9 (nothing is orphaned)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    expected = os.environ.get("PERFBOT_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(1)  # the parent died before the request above took effect


def main() -> int:
    confine_to_roots([Path(p) for p in sys.argv[1:]])   # the code roots (WorkerSession.launch)
    out = claim_stdout()
    die_with_parent()
    faulthandler.enable(file=sys.stderr)
    Worker(out).serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
