"""A benchmark's measurement in a new Python process: what a process has done before (compiled,
timed, profiled) changes what it measures, so a probe that needs a clean process runs there."""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(code: str, args: list[str], env: dict | None = None, timeout: float = 600) -> dict:
    """Run ``code`` (with benchmarks/ as ``sys.argv[1]`` and ``args`` after it) in a new process
    whose last line of output is a JSON object: ``{"status": "ok", **that object}``, or
    ``{"status": "error", "problem": the last line of its errors}``."""
    done = subprocess.run([sys.executable, "-c", code, HERE, *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "error", "problem": tail[:300]}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}
