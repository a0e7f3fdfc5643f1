"""Settings of the comparison, normally read from ``[tool.perfbot]`` (see bot.config), plus
the ``threshold_pct`` of suite manifest rows.

A row's threshold is, first match wins: ``[tool.perfbot.thresholds]`` (the project's own
settings), the manifest row's ``threshold_pct``, ``[tool.perfbot] threshold_pct``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from bot.config import PerfbotConfig, load_config
from common.errors import UserError


@dataclass(frozen=True)
class CompareConfig:
    threshold_pct: float = 3.0            # default per-row threshold, percent
    thresholds: dict[str, float] = field(default_factory=dict)  # per-row overrides
    # (name, batch, mode) -> percent, from the suite manifest's rows (see manifest_thresholds)
    suite_thresholds: dict[tuple[str, int, str], float] = field(default_factory=dict)
    alpha: float = 0.01                   # one-sided level of the rank test
    min_history: int = 5                  # past runs needed before the noise band counts
    busy_limit_pct: float = 10.0          # host rows: other work's CPU share that voids a row
    compile_threshold_pct: float = 25.0   # compile time: change that flags a row (bot.config)
    memory_threshold_pct: float = 10.0    # peak memory: change that flags a row
    # Fewer independent samples (worker processes) on a side: not judged. Five a side is the
    # fewest with which the one-sided rank test can reach p < 0.01 at all (1/252).
    min_samples: int = 5
    outlier_k: float = 5.0                # hiccup screen: robust SDs from the side's median
    band_z: float = 2.0                   # noise band = band_z * sqrt(2) * sd of past medians
    interval_level: float = 0.95          # two-sided level of the median-ratio interval
    bootstrap: int = 2000                 # resamples for the interval of the median ratio
    seed: int = 20261129                  # fixed, so a comparison is reproducible

    @classmethod
    def from_perfbot(cls, config: PerfbotConfig, **overrides) -> "CompareConfig":
        values = {"threshold_pct": config.threshold_pct, "thresholds": dict(config.thresholds),
                  "alpha": config.alpha, "min_history": config.min_history,
                  "busy_limit_pct": config.busy_limit_pct,
                  "compile_threshold_pct": config.compile_threshold_pct,
                  "memory_threshold_pct": config.memory_threshold_pct}
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_pyproject(cls, path=None, **overrides) -> "CompareConfig":
        """``[tool.perfbot]`` of ``path`` or of the nearest pyproject.toml."""
        return cls.from_perfbot(load_config(path), **overrides)

    def threshold_for(self, name: str, batch: int | None = None, mode: str | None = None) -> float:
        found = PerfbotConfig(self.threshold_pct, self.thresholds).row_threshold(name, batch, mode)
        if found is None:
            found = self.suite_thresholds.get((name, batch, mode))
        return self.threshold_pct if found is None else found


def manifest_thresholds(rows) -> dict[tuple[str, int, str], float]:
    """The ``threshold_pct`` of manifest rows (``models.manifest.Row``) that set one."""
    found = {}
    for row in rows:
        value = row.threshold_pct
        if value is None:
            continue
        if not math.isfinite(value) or not 0 < value < 100:
            raise UserError(f"manifest row {row.name!r}: threshold_pct must be between 0 and 100 "
                            f"percent, not {value!r}")
        found[(row.name, int(row.batch), row.mode)] = float(value)
    return found
