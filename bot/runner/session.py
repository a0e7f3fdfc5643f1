"""The parent's handle on one worker process: start it, send it commands with a time limit, and
turn anything that goes wrong (an error answer, a crash, a hang) into ``RowFailure`` with a
one-line reason.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Callable

from bot.runner.protocol import PROTOCOL_VERSION, decode, encode, one_line

# Starting a worker imports NumPy, ONNX and the compiler; on a busy machine that alone can take a
# while, and it is never the row's fault, so start-up gets at least this long.
MIN_START_S = 120.0


_LIVE: "weakref.WeakSet[WorkerSession]" = weakref.WeakSet()  # started and not yet closed


def kill_live_workers() -> None:
    """Kill every worker still running (an interrupted run measuring on several GPUs: the rows in
    flight on the other GPUs' threads end at once instead of measuring on)."""
    for session in list(_LIVE):
        if session.proc is not None and session.proc.poll() is None:
            session._kill()


class RowFailure(Exception):
    """A row cannot be (fully) measured; ``str()`` is the one-line reason that is recorded."""


class WorkerSession:
    """One ``python -m bot.runner.worker`` process running the code found under ``code_root``."""

    def __init__(self, code_root: Path, log_path: Path, on_phase: Callable[[str], None] | None = None,
                 cwd: Path | None = None, tool_root: Path | None = None,
                 env: dict[str, str] | None = None):
        self.code_root = Path(code_root)
        self.env = dict(env or {})  # set in the worker's environment (its GPU: CUDA_VISIBLE_DEVICES)
        self.tool_root = Path(tool_root) if tool_root else None
        self.log_path = Path(log_path)
        self.on_phase = on_phase or (lambda phase: None)
        self.cwd = cwd
        self.phase = "start"
        self.proc: subprocess.Popen | None = None
        self.events: queue.Queue = queue.Queue()
        self.hello: dict = {}
        self.busy = False  # a command was sent and not answered (interrupted, say)

    # ----- life cycle ---------------------------------------------------------------------------
    def start(self, timeout: float, cpus: set[int] | None = None) -> dict:
        """Start the worker and wait for its hello."""
        self.launch(cpus)
        return self.await_hello(timeout)

    def launch(self, cpus: set[int] | None = None) -> None:
        """Start the worker process without waiting for it. ``cpus``: the CPUs it may use (a
        worker started while another measures keeps off the CPU the measuring one is pinned to).
        Called on the thread that will outlive the worker: Linux's parent-death signal, which
        ends the worker with the runner, fires when the launching *thread* exits."""
        env = {**os.environ, **self.env}
        # The worker must import this code root's packages (its own compiler), nothing else: -P
        # keeps the current directory off sys.path and PYTHONPATH puts the code root first.
        roots = [str(self.code_root)]
        if self.tool_root is not None and self.tool_root.resolve() != self.code_root.resolve():
            roots.insert(0, str(tool_folder(self.tool_root)))  # the runner from there, the rest here
        env["PYTHONPATH"] = os.pathsep.join(roots + [p for p in [env.get("PYTHONPATH")] if p])
        env["PERFBOT_PARENT_PID"] = str(os.getpid())
        env.setdefault("PYTHONFAULTHANDLER", "1")
        self.log = open(self.log_path, "ab")
        self.log_start = self.log.seek(0, os.SEEK_END)  # this worker's own lines start here
        self.proc = subprocess.Popen(
            # the roots again as arguments: their packages come from there alone (own_code)
            [sys.executable, "-P", "-m", "bot.runner.worker", *roots], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, cwd=self.cwd, env=env,
            start_new_session=True)  # its own process group: a timeout kills all of it
        if cpus and hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(self.proc.pid, cpus)
            except OSError:
                pass  # not allowed here: it shares the CPUs, as it would without this
        threading.Thread(target=self._read, daemon=True).start()
        _LIVE.add(self)

    def await_hello(self, timeout: float) -> dict:
        self.hello = self._await(max(timeout, MIN_START_S), want="hello")
        if self.hello.get("protocol") != PROTOCOL_VERSION:
            raise RowFailure(f"worker speaks protocol {self.hello.get('protocol')}, "
                             f"this runner speaks {PROTOCOL_VERSION}")
        return self.hello

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None and self.busy:
            self._kill()  # it would only answer once the command is done: no point waiting
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(encode({"cmd": "quit"}).encode())
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()
        self.log.close()
        self.proc = None
        _LIVE.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ----- commands -----------------------------------------------------------------------------
    def request(self, command: dict, timeout: float) -> dict:
        """Send ``command``; its ``done`` payload, or ``RowFailure``."""
        if self.proc is None or self.proc.poll() is not None:
            raise RowFailure("worker is not running")
        try:
            self.proc.stdin.write(encode(command).encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # it died: _await reports how
        self.busy = True
        reply = self._await(timeout, want="done")
        self.busy = False
        return reply

    def _await(self, timeout: float, want: str) -> dict:
        deadline = _now() + timeout
        while True:
            try:
                message = self.events.get(timeout=max(0.0, deadline - _now()))
            except queue.Empty:
                self._kill()
                raise RowFailure(f"timed out after {timeout:g} s during {self.phase} (worker killed)") from None
            if message is None:
                raise RowFailure(self._death_reason())
            event = message.get("event")
            if event == "phase":
                self.phase = str(message.get("phase"))
                self.on_phase(self.phase)
            elif event == "error":
                raise RowFailure(one_line(message.get("error") or "worker reported an error"))
            elif event == want:
                return message

    def _read(self) -> None:
        for raw in self.proc.stdout:
            message = decode(raw.decode("utf-8", "replace"))
            if message is not None:
                self.events.put(message)
        self.events.put(None)  # end of stream: the worker exited

    # ----- failures -----------------------------------------------------------------------------
    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def _death_reason(self) -> str:
        code = self.proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            # Its stderr holds only faulthandler's stack dump, kept in the worker log.
            return f"worker crashed ({name}) during {self.phase}"
        what = f"worker exited with status {code} during {self.phase}"
        last = self._last_log_line()
        return one_line(f"{what}: {last}" if last else what)

    def _last_log_line(self) -> str:
        """The last thing the worker said on stderr (an exception's final line, usually)."""
        self.log.flush()
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(self.log_start, os.path.getsize(self.log_path) - 4096))
                lines = [ln.strip() for ln in fh.read().decode("utf-8", "replace").splitlines()]
        except OSError:
            return ""
        lines = [ln for ln in lines if ln and not ln.startswith("File ")]
        return lines[-1][:200] if lines else ""


_TOOL_FOLDERS: dict[Path, Path] = {}
# The packages a worker takes from this perfbot rather than from the revision it measures.
TOOL_PACKAGES = ("bot", "common")


def tool_folder(tool_root: Path) -> Path:
    """A folder holding only ``bot`` and ``common`` (links to ``tool_root``'s): first on a
    worker's path, it gives the worker this perfbot's runner and what the runner is built on,
    while ``compiler`` still comes from the code root (a revision from before ``common`` existed
    has none to give)."""
    import atexit
    import shutil
    import tempfile

    tool_root = Path(tool_root).resolve()
    folder = _TOOL_FOLDERS.get(tool_root)
    if folder is None or not folder.is_dir():
        folder = Path(tempfile.mkdtemp(prefix="perfbot-tool-"))
        for package in TOOL_PACKAGES:
            (folder / package).symlink_to(tool_root / package, target_is_directory=True)
        atexit.register(shutil.rmtree, folder, True)
        _TOOL_FOLDERS[tool_root] = folder
    return folder


def _now() -> float:
    import time

    return time.monotonic()
