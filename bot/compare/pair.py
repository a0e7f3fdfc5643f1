"""One comparison from start to end, made the same way for ``perfbot compare``, ``report`` and
``ab``: the thresholds read (``[tool.perfbot]`` and the suite manifest's rows), the two sides
found, the base branch's history and the head machine's calibration looked up, the rows compared.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bot.results_doc import load_compare

from .config import CompareConfig, manifest_thresholds
from .measurement import incomparable
from .results import compare_results
from .sides import calibration_for, history_for, history_of_compare, resolve_pair


@dataclass(frozen=True)
class Comparison:
    doc: dict              # the perfbot.compare/1 document
    history: dict | None   # {(name, batch, mode): the base branch's past rates}; None: not asked


def compare_config(manifest: str | None = None, rows=None, threshold: float | None = None) -> CompareConfig:
    """``[tool.perfbot]`` with the ``threshold_pct`` of the suite manifest's rows (``rows`` when
    given, else every row of the manifest at ``manifest``, else of the model zoo's) and a default
    threshold given on the command line."""
    if rows is None:
        from models.manifest import load_manifest

        rows = load_manifest(manifest or None).rows
    overrides = {} if threshold is None else {"threshold_pct": threshold}
    return CompareConfig.from_pyproject(suite_thresholds=manifest_thresholds(rows), **overrides)


def compare_docs(base: dict, head: dict, store, config: CompareConfig, with_history: bool = True) -> Comparison:
    """Two results documents compared with what ``store`` knows of them (None: nothing)."""
    history = history_for(store, base, head) if with_history else None
    doc = compare_results(base, head, config, history or None, calibration_for(store, head))
    return Comparison(doc, history)


def compare_specs(base_spec: str, head_spec: str, db: str | None, with_history: bool = True,
                  config: CompareConfig | None = None,
                  warn: Callable[[str], None] = lambda text: None) -> Comparison:
    """Two run specs (ids, commits, branches or results files) compared. The store is opened
    only when a spec is not a file, or for the history of two files in a database given by
    ``db``; a pair whose rates are not comparable (other targets or methods) is ``warn``-ed of."""
    from bot.store import open_store

    config = config or compare_config()
    files = Path(base_spec).is_file() and Path(head_spec).is_file()
    # Two files and a --db only for their history: a database that is not there is a mistyped --db.
    store = open_store(db, create=not files) if not files or (with_history and db) else None
    try:
        base, head, _ = resolve_pair(base_spec, head_spec, store, with_history=False)
        mismatch = incomparable(base, head)
        if mismatch:
            warn(mismatch)
        return compare_docs(base, head, store, config, with_history)
    finally:
        if store is not None:
            store.close()


def compared_file(path: str, db: str | None, with_history: bool = True) -> Comparison:
    """A compare document written earlier (validated), with the base branch's history of its
    rows from ``db`` when one is given."""
    from bot.store import open_store

    doc = load_compare(path)
    if not (db and with_history):
        return Comparison(doc, None)
    with open_store(db, create=False) as store:
        return Comparison(doc, history_of_compare(store, doc))
