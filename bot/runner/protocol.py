"""The line protocol between the runner (parent) and a measuring worker process.

The parent writes one JSON command per line to the worker's stdin; the worker answers on its
stdout, one JSON event per line. The worker redirects everything else it (or a compiler) prints to
stderr, so stdout carries nothing but events. The protocol is versioned because in A/B mode the
worker comes from another revision of this repository than the parent.

Events: ``hello`` (once, at start), ``phase`` (progress: build, compile, warm-up, measure,
accuracy), then exactly one ``done`` or ``error`` per command.
"""
from __future__ import annotations

import json
import math

PROTOCOL_VERSION = 1

# Phases shown by the progress display, in the order a row goes through them.
PHASES = ("start", "build", "compile", "warm-up", "measure", "accuracy")


def encode(message: dict) -> str:
    """One protocol line. Non-finite floats become null: JSON has no NaN and neither does the store."""
    return json.dumps(_finite(message), separators=(",", ":")) + "\n"


def decode(line: str) -> dict | None:
    """The message on ``line``, or None for anything that is not a protocol message."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def one_line(text: str, limit: int = 400) -> str:
    """Error reasons are stored and shown as a single line of bounded length."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
