"""Which steps, run eagerly once more, leave a gpu process's CUDA-graph replays slower?

On an H100 (benchmarks/RESULTS.md, section 6) a process that has compiled a suite row, run it
once eagerly and recorded it replays ResNet-50 batch 1 in about 545 us; one more eager run of the
program's steps leaves every later replay at about 590 us, for the rest of the process. This probe
narrows that down to a kind of step: each action runs in a fresh process (caches filled by a
first compile), which compiles the row, keeps every step's arguments from the first (eager) run,
records and times the replays, runs again eagerly only the steps of the kinds the action names,
and times the replays again.

    source benchmarks/gpu_env.sh
    python3 benchmarks/process_state.py --rows torchvision-resnet50_1 \\
        --actions none,all,split-gemm,split-cudnn,cudnn,Gemm,fused_pointwise

An action is ``none`` (nothing is run again), ``cold`` (nothing either, but the process compiles
with an empty plan cache: a first compile, which times the convolutions' candidate paths),
``all`` (every step), kinds joined by ``+``, a
range of steps in run order (``0-29``: the first 29), ``each`` (one action for every kind the
row has, as the cache-filling process found them), or memory taken and written with no step run
(see ``allocate``: ``allocfill0.5x20``, ``refill0.5x20``), or another process on the GPU while the
replays are timed again (``peer``: a CUDA context, idle; ``peerrow``: one that has compiled and
run the row, as the other side's worker of an A/B round has), or graphs captured on new streams
and launched on the caller's (``sidegraph4x20``: as a tuning compile times candidate paths), or
the row compiled N more times in the same process, all copies kept alive and each one's replays
timed (``copies4``: "after" holds one median a copy; whether a speed belongs to the process or to
where a program's buffers landed in device memory). A suffix runs something more:
``/free-all`` hands the default pool's unused blocks back to the driver after the action, before
the replays are timed again; ``/reserve64`` takes and drops one 64 MiB block first, so that the
action's allocations split it instead of asking the driver; ``/on-new`` runs the action on a new
stream instead of the caller's. A step's kind is its runner's
``path`` where it has one (a convolution's: split-gemm, split-cudnn, cudnn-nhwc, ...), else its
instruction's op. One JSON line an action goes to $OUT/process_state.log (with the recorded
segments, the pool's size and the GPU's clocks); the table printed last gives the replay's
device microseconds before and after, and the change. (Actions on the root's own stream and
replays timed there answered where eager work slows the replays; settled and removed once every
launch went to the caller's stream, benchmarks/RESULTS.md section 6.)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys

from fresh_process import run_json

REPLAYS = 300       # back-to-back replays a timing (a batch-1 row: about 0.2 s)


def step_kind(ins, fn) -> str:
    return getattr(fn, "path", None) or ins.op


def gpu_bodies(program) -> list:
    """The lowered modules of the program's gpu roots (the steps its runs go through)."""
    return [exe.body for exe in program.compiled.context.roots.values() if hasattr(exe, "stepwise")]


def run_keeping_arguments(program, args) -> list:
    """Run ``program`` once (its first run is eager) and return every step it ran as
    ``(kind, fn, arguments)``, the arguments kept alive for a later run of that step alone."""
    kept: list = []
    saved = []
    for body in gpu_bodies(program):
        saved.append((body, body.steps))

        def keeping(ins, fn):
            def run(*xs):
                kept.append((step_kind(ins, fn), fn, xs))
                return fn(*xs)
            return run
        body.steps = [(ins, keeping(ins, fn), inputs, dead) for ins, fn, inputs, dead in body.steps]
    try:
        program.compiled.run_raw(args)
    finally:
        for body, steps in saved:
            body.steps = steps
    return kept


def selected(kept: list, action: str) -> list:
    """The kept steps that ``action`` runs again."""
    if action in ("none", "cold"):
        return []
    if action == "all":
        return kept
    first, dash, end = action.partition("-")
    if dash and first.isdigit() and end.isdigit():       # a range of steps, in run order: 0-29
        return kept[int(first):int(end)]
    kinds = set(action.split("+"))
    return [step for step in kept if step[0] in kinds]


def allocate(action: str) -> list:
    """``allocMBxCOUNT``: COUNT arrays of MB MiB from CuPy's default pool, kept alive;
    ``allocfreeMBxCOUNT`` the same, handed back to the pool at once; ``cudamallocMBxCOUNT``
    device memory straight from the driver, freed at once (``alloc2x5``: five of 2 MiB);
    ``allocfillMBxCOUNT`` kept alive and written once by a kernel; ``refillMBxCOUNT`` one array
    written COUNT times. Memory taken, no step run:
    whether new device memory alone changes the replays."""
    match = re.fullmatch(r"(alloc|allocfree|allocfill|refill|cudamalloc)([0-9.]+)x([0-9]+)", action)
    if match is None:
        return []
    import cupy
    kind, mb, count = match.groups()
    nbytes = int(float(mb) * 2**20)
    if kind == "cudamalloc":
        for ptr in [cupy.cuda.runtime.malloc(nbytes) for _ in range(int(count))]:
            cupy.cuda.runtime.free(ptr)
        return []
    if kind == "refill":        # one array, written COUNT times: launches without new buffers
        one = cupy.empty(nbytes, dtype=cupy.uint8)
        for _ in range(int(count)):
            one.fill(1)
        return [one]
    arrays = [cupy.empty(nbytes, dtype=cupy.uint8) for _ in range(int(count))]
    if kind == "allocfill":
        for a in arrays:
            a.fill(1)
    return arrays if kind in ("alloc", "allocfill") else []


def side_graphs(action: str) -> int:
    """``sidegraphKxN``: N fill kernels captured into a CUDA graph on a new stream of its own, the
    graph launched twice on the caller's stream, K times (K new streams): what conv_choice's
    timing of a convolution's candidate paths does in a compile that tunes. Returns K (0: not
    such an action)."""
    match = re.fullmatch(r"sidegraph([0-9]+)x([0-9]+)", action)
    if match is None:
        return 0
    import cupy
    streams, fills = (int(g) for g in match.groups())
    from compiler.targets.gpu.graphs import after_callers_work
    one = cupy.empty(2**19, dtype=cupy.uint8)
    caller = cupy.cuda.get_current_stream()
    for _ in range(streams):
        side = cupy.cuda.Stream(non_blocking=True)
        after_callers_work(side)
        with side:
            side.begin_capture()
            for _ in range(fills):
                one.fill(1)
            graph = side.end_capture()
        graph.launch(caller)
        graph.launch(caller)
    caller.synchronize()
    return streams


def peer(action: str, row_name: str):
    """``peer``: a second process holding a CUDA context on this GPU, idle; ``peerrow``: one that
    has also compiled ``row_name`` and run it three times (eager, recorded, replayed), as the
    other side's worker of an A/B round has; None for any other action. The process lives until
    this one closes its stdin (it ends with this one)."""
    if action not in ("peer", "peerrow"):
        return None
    import subprocess
    work = ("from process_state import probe_peer; probe_peer(sys.argv[1])" if action == "peerrow"
            else "import cupy; cupy.zeros(1).sum(); cupy.cuda.Device().synchronize()")
    code = f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); {work}; " \
           "print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([sys.executable, "-c", code, row_name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the peer process of {action} did not start (exit {proc.wait()})")
    return proc


def copy_timers(action: str, row_name: str) -> list:
    """``copiesN``: the row compiled N more times in this process, every copy kept alive (each
    with its own parameters and buffers at new device addresses), and a timer for each copy's
    replays after its eager first run; [] for any other action."""
    match = re.fullmatch(r"copies([0-9]+)", action)
    if match is None:
        return []
    from bot.runner.timing import DeviceTimer
    timers = []
    for _ in range(int(match.group(1))):
        program, args = compiled_row(row_name)
        program.compiled.run_raw(args)
        timers.append(DeviceTimer(lambda program=program, args=args: program.compiled.run_raw(args)))
    return timers


def compiled_row(row_name: str):
    """The suite row compiled for the gpu target, and its arguments on device buffers."""
    from gpu_row_probe import device_args     # benchmarks/ is the script's own folder on sys.path
    from models.cache import build_model
    from models.inputs import make_feeds
    from models.manifest import load_manifest

    from compiler.onnx.parser import parse_onnx
    row = load_manifest().get(row_name)
    path = build_model(row)
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    program.compile("gpu", fp16=row.mode == "fp16", offload_copy=False)
    return program, device_args(program, make_feeds(row, path))


def probe_peer(row_name: str) -> None:
    """A peer process's work for ``peerrow``: compile the row and run it three times."""
    import cupy
    program, args = compiled_row(row_name)
    for _ in range(3):
        program.compiled.run_raw(args)
    cupy.cuda.Device().synchronize()


def segments(program) -> list[str]:
    """The recorded roots' segments: "graph", or the op of a step a replay runs eagerly."""
    return [seg[0] if seg[0] == "graph" else seg[1].op
            for exe in program.compiled.context.roots.values() if getattr(exe, "graphs", None)
            for seg in exe.graphs.segments]


def replay_us(timer) -> float:
    """Device microseconds of one replay: ``timer`` (the runner's ``DeviceTimer``) over
    ``REPLAYS`` back-to-back runs, after a few to settle."""
    timer.seconds(20)
    return timer.seconds(REPLAYS) * 1e6 / REPLAYS


def probe(row_name: str, action: str) -> dict:
    """``action`` in this process: replay times before and after, and the steps it ran again."""
    import cupy

    from bot.runner.gpu_state import GpuWatch
    from bot.runner.timing import DeviceTimer
    program, args = compiled_row(row_name)
    kept = run_keeping_arguments(program, args)
    timer = DeviceTimer(lambda: program.compiled.run_raw(args))
    watch, pool = GpuWatch(), cupy.get_default_memory_pool()
    before = [replay_us(timer) for _ in range(3)]
    state_before, pool_before = watch.snapshot(), pool.total_bytes()
    again, held = run_action(program, kept, action)
    other = peer(action, row_name)          # alive while the replays are timed again
    copies = copy_timers(action, row_name)
    pool_after = pool.total_bytes()
    after = ([statistics.median(replay_us(t) for _ in range(3)) for t in copies] if copies
             else [replay_us(timer) for _ in range(3)])
    if other is not None:
        other.stdin.close()
        other.wait()
    # the clocks and the pool's size on both sides: a clock or a new allocation would explain a change
    return {"before_us": [round(x, 1) for x in before], "after_us": [round(x, 1) for x in after],
            "steps_run": len(again), "kinds": sorted({k for k, _f, _x in kept}),
            "held_mb": round(sum(a.nbytes for a in held) / 2**20, 1),
            "step_kinds": [k for k, _f, _x in kept], "segments": segments(program),
            "gpu_before": state_before,
            "gpu_after": watch.snapshot(), "pool_mb": [round(pool_before / 2**20, 1), round(pool_after / 2**20, 1)]}


def action_stream(suffix: str):
    """The stream an action's work goes to: the caller's (no suffix) or a new one (``on-new``)."""
    import contextlib

    import cupy
    if suffix == "on-new":
        return cupy.cuda.Stream()
    return contextlib.nullcontext()


def run_action(program, kept: list, action: str) -> tuple[list, list]:
    """Do ``action`` (the steps it selects, or the memory it takes; the suffix after ``/``
    says what more) and return the steps it ran and the arrays it keeps alive."""
    import cupy
    pool = cupy.get_default_memory_pool()
    steps_action, _slash, suffix = action.partition("/")
    whole_process = re.match("alloc|refill|cudamalloc|peer|sidegraph|copies", steps_action)
    again = [] if whole_process else selected(kept, steps_action)
    with action_stream(suffix):
        if suffix.startswith("reserve"):
            # one block taken and dropped at once: the pool keeps it free, and the steps' allocations split it
            cupy.empty(int(float(suffix[len("reserve"):]) * 2**20), dtype=cupy.uint8)
        for _kind, fn, xs in again:
            fn(*xs)
        held = allocate(steps_action)
        side_graphs(steps_action)
    if suffix == "free-all":
        pool.free_all_blocks()
    cupy.cuda.Device().synchronize()
    return again, held


def fresh_process(row: str, action: str) -> dict:
    """``probe`` in a new process; for ``cold`` with an empty plan cache of its own, so that its
    compile times the convolutions' paths and builds their plans, as a first compile does."""
    import tempfile
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import process_state; "
            "print(json.dumps(process_state.probe(sys.argv[2], sys.argv[3])))")
    if action.partition("/")[0] != "cold":
        return run_json(code, [row, action], timeout=300)
    with tempfile.TemporaryDirectory(prefix="perfbot-cold-plans-") as empty:
        return run_json(code, [row, action], env={"PERFBOT_GPU_CACHE": empty}, timeout=300)


def expanded(actions: list[str], kinds: list[str]) -> list[str]:
    """``actions`` with ``each`` replaced by one action for every kind in ``kinds``."""
    out: list[str] = []
    for action in actions:
        out.extend(kinds if action == "each" else [action] if action else [])
    return out


def measure(row: str, actions: list[str]) -> list[dict]:
    """Each action on ``row`` in a fresh process, after one that fills the caches (so each
    action's process compiles warm, as a measuring worker does)."""
    first = fresh_process(row, "none")
    if first.get("status") != "ok":
        return [{"row": row, "action": "none", **first}]
    return [{"row": row, "action": action, **fresh_process(row, action)}
            for action in expanded(actions, first["kinds"])]


def _extras(result: dict) -> str:
    """The pool's size before and after the action, and the SM clock, where recorded."""
    text = ""
    if "pool_mb" in result:
        text += f"  pool {result['pool_mb'][0]}->{result['pool_mb'][1]} MB"
    if result["action"].startswith("copies"):
        text += f"  copies {min(result['after_us']):.1f}-{max(result['after_us']):.1f} us"
    clocks = [(result.get(side) or {}).get("sm_mhz") for side in ("gpu_before", "gpu_after")]
    if None not in clocks:
        text += f"  sm {clocks[0]}->{clocks[1]} MHz"
    return text


def table(results: list[dict]) -> str:
    """One line an action: the median replay before and after it, and the change."""
    lines = [f"{'row':28} {'action':28} {'steps':>5} {'before us':>9} {'after us':>9} {'change':>7}"]
    for r in results:
        if r["status"] != "ok":
            lines.append(f"{r['row']:28} {r['action']:28} error: {r['problem']}")
            continue
        before, after = statistics.median(r["before_us"]), statistics.median(r["after_us"])
        lines.append(f"{r['row']:28} {r['action']:28} {r['steps_run']:5d} {before:9.1f} {after:9.1f} "
                     f"{100 * (after / before - 1):+6.1f}%{_extras(r)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="suite rows, comma-separated")
    ap.add_argument("--actions", default="none,all")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    results = [result for row in args.rows.split(",") if row
               for result in measure(row, args.actions.split(","))]
    with open(os.path.join(args.out, "process_state.log"), "a") as log:
        log.writelines(json.dumps(result) + "\n" for result in results)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
