"""Noise-aware comparison of two runs (see ``stats`` for the method).

    doc = compare_results(base_doc, head_doc, CompareConfig.from_pyproject(), history)
    base_doc = resolve_side("abc1234", store)   # file, run id or commit
    comparison = bot.compare.pair.compare_specs("main", "run-id", db)   # as `perfbot compare` does
"""
from .config import CompareConfig
from .results import COMPARE_SCHEMA_ID, MARK_SYMBOLS, compare_results, needs_remeasure, settled
from .sides import calibration_for, history_for, resolve_pair, resolve_side

__all__ = ["compare_results", "resolve_side", "CompareConfig", "needs_remeasure",
           "history_for", "resolve_pair", "MARK_SYMBOLS", "COMPARE_SCHEMA_ID",
           "settled", "calibration_for"]
