"""Deciding whether one row got slower, faster or neither — without crying wolf.

Rates are throughputs (higher is better); d = (new − old) / old of the summary rates (medians).
Before testing, each side's samples are screened for hiccups: a sample more than ``outlier_k``
(default 5) robust standard deviations (1.4826·MAD, floored at 0.25 % of the median) from its
side's median is left out of the tests — unless that would drop more than a fifth of the side,
which is a real bimodal behaviour rather than a hiccup. The samples stay stored and the summary
rate (the runner's median) is unchanged.

A row is a regression (🔴) only when all of these hold:

1. **Significant**: a one-sided Mann–Whitney U test says the head samples are stochastically
   smaller than the base samples, p < alpha (default 0.01). Rank-based, so an occasional outlier
   sample (a GC pause, a clock hiccup) cannot make or break it.
2. **Reaches the threshold**: the bootstrap interval of the median ratio (default 95 %)
   reaches the row's threshold, i.e. a slowdown of threshold size is consistent with the
   samples. We stay silent only when we are confident the change is smaller than the
   threshold. (Demanding the point estimate itself beyond the threshold would miss half of the
   slowdowns that are exactly at it; demanding the whole interval beyond it would miss most.)
3. **Beyond the row's noise band**: when the base branch has at least ``min_history`` past
   runs of the row, |d| must exceed band = band_z · √2 · s, where s is the robust (MAD-based)
   relative spread of those runs' medians (the difference of two run medians has √2 · s spread).
   A row whose own history swings by ±3 % cannot be judged on a 4 % drop.

An improvement (🔆) is the mirror image. The samples tested are independent ones: one value per
worker process (``bot.compare.measurement.independent_samples``). With fewer than
``min_samples`` of them on a side there is nothing to test, and the row is never flagged: a
difference between two processes is as likely the processes' own as the revisions' (the reason
says so, and how to get more).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from .config import CompareConfig

OK, REGRESSION, IMPROVEMENT, ERROR = "ok", "regression", "improvement", "error"


@dataclass(frozen=True)
class Assessment:
    mark: str
    diff_pct: float | None
    p_value: float | None          # one-sided, in the direction of the observed change
    ci_low_pct: float | None
    ci_high_pct: float | None
    noise_band_pct: float | None
    reason: str | None
    outliers_old: int = 0          # samples screened out as hiccups, per side
    outliers_new: int = 0


def diff_pct(new: float, old: float) -> float:
    return (new - old) / old * 100.0


def screen_outliers(values: np.ndarray, k: float, floor_pct: float = 0.25,
                    max_fraction: float = 0.2) -> np.ndarray:
    """The samples without hiccups (see the module docstring)."""
    center = np.median(values)
    spread = max(1.4826 * np.median(np.abs(values - center)), abs(center) * floor_pct / 100.0)
    far = np.abs(values - center) > k * spread
    if far.sum() > int(max_fraction * values.size):
        return values
    return values[~far]


def one_sided_p(base: np.ndarray, head: np.ndarray) -> tuple[float, float]:
    """(p that head is slower, p that head is faster), Mann–Whitney U."""
    if np.ptp(np.concatenate([base, head])) == 0:
        return 1.0, 1.0  # all samples identical: no evidence either way
    slower = mannwhitneyu(head, base, alternative="less").pvalue
    faster = mannwhitneyu(head, base, alternative="greater").pvalue
    return float(slower), float(faster)


def median_ratio_interval(base: np.ndarray, head: np.ndarray, level: float, resamples: int,
                          seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of median(head)/median(base) − 1, in percent."""
    rng = np.random.default_rng(seed)
    base_med = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
    head_med = np.median(head[rng.integers(0, head.size, (resamples, head.size))], axis=1)
    tail = (1.0 - level) / 2.0
    # Rates no float ratio can relate (a denormal beside a normal rate) give inf/nan here; the
    # caller turns those into an error row, so numpy's warnings would only be noise on stderr.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratios = (head_med / base_med - 1.0) * 100.0
        low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


def noise_band_pct(past_rates: list[float], config: CompareConfig) -> float | None:
    """How far two runs' medians of this row stray apart on noise alone, in percent."""
    rates = np.asarray([r for r in past_rates if r and math.isfinite(r) and r > 0], dtype=float)
    if rates.size < config.min_history:
        return None
    center = np.median(rates)
    robust_sd = 1.4826 * np.median(np.abs(rates - center)) / center * 100.0
    return float(config.band_z * math.sqrt(2.0) * robust_sd)


def row_seed(name: str, batch: int, mode: str, config: CompareConfig) -> int:
    return zlib.crc32(f"{name}/{batch}/{mode}".encode()) ^ config.seed


def assess(base: list[float], head: list[float], rate_old: float, rate_new: float,
           threshold_pct: float, config: CompareConfig, *, band_pct: float | None = None,
           seed: int = 0) -> Assessment:
    """Mark one row from both sides' samples and summary rates (see the module docstring)."""
    d = diff_pct(rate_new, rate_old)
    b, h = np.asarray(base, dtype=float), np.asarray(head, dtype=float)
    if min(b.size, h.size) < config.min_samples:
        return _too_few(d, band_pct, min(b.size, h.size), config.min_samples)
    b_kept, h_kept = screen_outliers(b, config.outlier_k), screen_outliers(h, config.outlier_k)
    dropped = {"outliers_old": b.size - b_kept.size, "outliers_new": h.size - h_kept.size}
    b, h = b_kept, h_kept
    p_slower, p_faster = one_sided_p(b, h)
    low, high = median_ratio_interval(b, h, config.interval_level, config.bootstrap, seed)
    slower = d < 0
    p = p_slower if slower else p_faster
    reaches = low <= -threshold_pct if slower else high >= threshold_pct
    beyond_band = band_pct is None or abs(d) > band_pct
    ci = f"{low:+.2f}..{high:+.2f}%"
    if p >= config.alpha:
        return Assessment(OK, d, p, low, high, band_pct,
                          f"not significant (p={p:.2g} ≥ {config.alpha:g}, interval {ci})"
                          if abs(d) >= threshold_pct else None, **dropped)
    if not reaches:
        return Assessment(OK, d, p, low, high, band_pct,
                          f"significant but below the {threshold_pct:g}% threshold (interval {ci})"
                          if abs(d) >= threshold_pct / 2 else None, **dropped)
    if not beyond_band:
        return Assessment(OK, d, p, low, high, band_pct,
                          f"within the row's noise band of ±{band_pct:.2f}% (base history)", **dropped)
    mark = REGRESSION if slower else IMPROVEMENT
    word = "slower" if slower else "faster"
    level = f"{config.interval_level * 100:g}%"
    return Assessment(mark, d, p, low, high, band_pct,
                      f"significantly {word} ({level} interval of the median ratio {ci})",
                      **dropped)


def _too_few(d: float, band_pct: float | None, n: int, needed: int) -> Assessment:
    what = "one process" if n == 1 else f"{n} independent samples"
    reason = (f"{what} per side: not enough independent samples to judge (at least {needed} "
              "needed); use `perfbot ab`, or `perfbot run --rounds N` for both runs")
    return Assessment(OK, d, None, None, None, band_pct, reason)
