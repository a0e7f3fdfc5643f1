"""The runner: measures suite rows (rate, compile time, peak memory, accuracy against ONNX
Runtime), every row in its own worker process, into the results store.

    run_suite(store, RunRequest(...)) -> run_id            # perfbot run
    run_ab(store, AbRequest(...)) -> AbOutcome              # perfbot ab

Modules: ``worker`` (the measuring process) and ``protocol`` (how the parent talks to it),
``session`` (the parent's handle on a worker), ``sides`` (one row on one or more revisions),
``suite`` and ``ab`` (the two commands), ``worktrees``, ``progress``, ``render``.

Exports are loaded lazily: every worker process imports this package, and it should not pay
for the parent's imports (rich, the store, jsonschema).
"""
from importlib import import_module

_EXPORTS = {"run_suite": "suite", "RunRequest": "suite", "run_ab": "ab", "AbRequest": "ab",
            "AbOutcome": "ab", "Settings": "sides"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
