"""Our compiled program in a process of its own, timed when the peers benchmark asks.

peers.py times PyTorch and us in rounds, alternating. Timed in PyTorch's process, our CUDA-graph
replays ran in the slow state of benchmarks/RESULTS.md section 6: PyTorch's CUDA-graph warm-up
runs eagerly on a side stream (as its documentation does it), and eager kernels on a stream other
than the one our graphs replay on left every later replay of ResNet-50 at batch 1 8 % slower
(H100, 2026-12-05: 596 us a run in peers.py against 536 us in the runner's worker processes). So
ours lives in a child process that compiles the row and holds its buffers on the device, and
the parent asks it for a sample in each round, between PyTorch's: the rounds still interleave,
and neither side's process state is the other's doing. A child whose compile timed the
convolutions' paths (``compiler.tuning``: that process is slow too) is replaced once by one
that reads the choices back, as the runner's workers are.

The protocol is one JSON object a line: ``{"cmd": "time", "reps": N}`` -> ``{"seconds": s}``
(one run's seconds: N back-to-back runs, host clock, after a synchronised warm run, as peers.py
times PyTorch), ``{"cmd": "output"}`` -> ``{"path": npy file}`` (the first output of a run).

    child: python3 benchmarks/ours_process.py MODEL.onnx BATCH DTYPE FEEDS.npz
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


class OursProcess:
    """The child process serving one row: started and compiled in ``__init__``."""

    def __init__(self, path: str, batch: int, dtype: str, feeds: dict, server: list | None = None):
        """``server``: the child's command, less its arguments (this file's ``_serve`` by default)."""
        self.folder = tempfile.TemporaryDirectory(prefix="peers-ours-")
        self.feeds_path = os.path.join(self.folder.name, "feeds.npz")
        np.savez(self.feeds_path, **feeds)
        self.command = (server or [sys.executable, os.path.abspath(__file__)]) + \
            [path, str(batch), dtype, self.feeds_path]
        self.replaced = False
        self.ready = self._start()
        if self.ready.get("tuned"):
            self.close(keep_folder=True)
            self.replaced = True
            self.ready = self._start()

    def _start(self) -> dict:
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self._reply()

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"our process ended (exit {self.proc.wait()}): its errors are above")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"our process: {reply['error']}")
        return reply

    def _ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    @property
    def compile_s(self) -> float:
        return self.ready["compile_s"]

    def seconds(self, reps: int) -> float:
        """One run's seconds, from ``reps`` back-to-back runs."""
        return self._ask({"cmd": "time", "reps": int(reps)})["seconds"]

    def output(self) -> np.ndarray:
        return np.load(self._ask({"cmd": "output"})["path"])

    def close(self, keep_folder: bool = False) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not keep_folder:
            self.folder.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def host_timer(fn, sync, reps: int) -> float:
    """One run's seconds as peers.py times PyTorch and ours alike: a synchronised warm run, then
    ``reps`` back-to-back runs on the host clock, synchronised."""
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - start) / reps


def _array_library():
    """CuPy and a device synchronisation; NumPy and nothing on the emulated gpu target
    (PERFBOT_GPU_EMULATE=1, the tests of this protocol)."""
    from compiler.targets.gpu.options import GpuOptions
    if GpuOptions.from_environment().emulate:
        return np, lambda: None
    import cupy
    cupy.zeros(1).sum()                     # the CUDA context before the clock, as in PyTorch's process
    return cupy, cupy.cuda.Device().synchronize


def compiled(path: str, batch: int, dtype: str, feeds: dict, xp):
    """The file parsed and compiled for the gpu target, and its ``run_raw`` arguments on device
    buffers (``xp``): the feeds in place, output buffers supplied, as PyTorch is timed."""
    from compiler.onnx.parser import parse_onnx
    program = parse_onnx(path, batch_size=batch)
    program.compile("gpu", fp16=dtype == "fp16", offload_copy=False)
    args = [xp.asarray(feeds[p.name]) if p.name in feeds else xp.empty(p.shape.lens, dtype=p.shape.dtype)
            for p in program.main.parameters()]
    return program, args


def _serve(path: str, batch: int, dtype: str, feeds_path: str) -> None:
    """The child: compile, answer requests until stdin closes."""
    import compiler.onnx.parser  # noqa: F401  imported before the clock
    from compiler import tuning

    out = sys.stdout
    sys.stdout = sys.stderr                 # the compiler's prints must not break the protocol
    xp, sync = _array_library()
    feeds = dict(np.load(feeds_path))
    tuned = tuning.count()
    start = time.perf_counter()
    program, args = compiled(path, batch, dtype, feeds, xp)
    compile_s = time.perf_counter() - start

    def run():
        return program.compiled.run_raw(args)
    for _ in range(3):                      # eager, recorded, replayed
        run()
    sync()
    answer(out, {"compile_s": round(compile_s, 2), "tuned": tuning.count() - tuned})
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "time":
            answer(out, {"seconds": host_timer(run, sync, request["reps"])})
        elif request["cmd"] == "output":
            result = os.path.join(os.path.dirname(feeds_path), "output.npy")
            first = run()[0]
            np.save(result, first.get() if hasattr(first, "get") else np.asarray(first))   # CuPy or NumPy
            answer(out, {"path": result})
        else:
            answer(out, {"error": f"unknown request {request['cmd']!r}"})


def answer(out, reply: dict) -> None:
    out.write(json.dumps(reply) + "\n")
    out.flush()


if __name__ == "__main__":
    model_path, batch_size, row_dtype, feeds_file = sys.argv[1:5]
    try:
        _serve(model_path, int(batch_size), row_dtype, feeds_file)
    except Exception as exc:  # noqa: BLE001 - the parent reports it as the row's error
        answer(sys.__stdout__, {"error": f"{type(exc).__name__}: {exc}"[:300]})
        raise
