"""A fault-injection hook for tests of the runner's isolation (crash, hang, exit, out of memory).

TEST-ONLY. Set ``PERFBOT_TEST_FAULT`` to ``NAME@PHASE=ACTION[,NAME@PHASE=ACTION...]`` and the
worker measuring row NAME misbehaves when it enters PHASE (build, compile, warm-up, measure,
accuracy). ACTION is one of ``segv`` (the process dies of SIGSEGV), ``exit`` (``os._exit(3)``,
no cleanup), ``hang`` (sleeps forever) or ``oom`` (raises MemoryError). Without the variable the
hook does nothing; nothing in perfbot sets it.
"""
from __future__ import annotations

import os
import signal
import time

ENV = "PERFBOT_TEST_FAULT"


def maybe_inject(row: str | None, phase: str) -> None:
    spec = os.environ.get(ENV)
    if not spec or not row:
        return
    for item in spec.split(","):
        where, _, action = item.strip().partition("=")
        name, _, at = where.partition("@")
        if name == row and at == phase:
            _act(action)


def _act(action: str) -> None:
    if action == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif action == "exit":
        os._exit(3)
    elif action == "hang":
        while True:
            time.sleep(3600)
    elif action == "oom":
        raise MemoryError("injected out-of-memory fault")
