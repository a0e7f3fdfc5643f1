"""Numbers and marks as every renderer shows them, so Markdown, terminal and HTML agree."""
from __future__ import annotations

import math

PERF_MARKS = {"ok": "✅", "regression": "🔴", "improvement": "🔆", "error": "❌"}
ACCURACY_MARKS = {"PASSED": "✅", "FAILED": "🔴", "SKIPPED": "⏭️", "ERROR": "❌"}
ACCURACY_WORDS = {
    "PASSED": "meets tolerance",
    "FAILED": "not within tolerance",
    "SKIPPED": "not checked",
    "ERROR": "could not be checked",
}
# For the HTML page: symbols every common font has (emoji fonts are often missing on servers
# and in headless browsers), next to a coloured label.
PERF_SYMBOLS = {"ok": "✓", "regression": "▼", "improvement": "▲", "error": "✗"}
ACCURACY_SYMBOLS = {"PASSED": "✓", "FAILED": "✗", "SKIPPED": "–", "ERROR": "✗"}
MISSING = "—"
# Project and patch coverage count a line whose branches were not all taken differently, each as
# the tool it must equal does (bot/coverage/figures.py); every coverage view states both rules.
COVERAGE_RULES = ("Coverage counts a line that ran but left a branch untaken as partial, not covered "
                  "(Codecov's rule); patch coverage counts an added line as covered once it ran "
                  "(diff-cover's rule), so one file's two figures can differ over the same lines.")


def _num(value: object) -> float | None:
    """A number to format, or None; documents are untrusted, so a string never reaches format()."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def floor2(value: float) -> float:
    """Two decimals rounded down, as Codecov shows coverage (91.3793% is 91.37%, not 91.38%).

    The small epsilon keeps values like 0.29*100 = 28.999999999999996 at 29.
    """
    return math.floor(value * 100 + 1e-7) / 100


def short_sha(commit: str | None, length: int = 6) -> str:
    return str(commit or "unknown")[:length]


def rate(value: float | None) -> str:
    """Inferences per second: thousands separators, two decimals (``5,306.36``)."""
    value = _num(value)
    return MISSING if value is None else f"{value:,.2f}"


def _signed(value: float | None, spec: str, suffix: str = "") -> str:
    """A change with its sign; a zero is never shown negative."""
    value = _num(value)
    if value is None:
        return MISSING
    text = format(value, spec)
    return ("+" + text[1:] if text.startswith("-") and float(text.lstrip("-").replace(",", "")) == 0
            else text) + suffix


def signed_pct(value: float | None) -> str:
    """A change in percent with its sign (``+0.03%``, ``-4.71%``); never ``-0.00%``."""
    return _signed(value, "+.2f", "%")


def coverage_pct(value: float | None) -> str:
    value = _num(value)
    return "?" if value is None else f"{floor2(value):.2f}%"


def number(value: float | None, digits: int = 4) -> str:
    value = _num(value)
    return MISSING if value is None else f"{value:.{digits}g}"


def mebibytes(value: int | float | None) -> str:
    value = _num(value)
    return MISSING if value is None else f"{value / 2**20:,.1f} MiB"


def micros(value: float | None) -> str:
    """Microseconds per run (``1,234.5``)."""
    value = _num(value)
    return MISSING if value is None else f"{value:,.1f}"


def signed_micros(value: float | None) -> str:
    """A change in microseconds per run (``+70.0``, ``-1,250.5``)."""
    return _signed(value, "+,.1f")
