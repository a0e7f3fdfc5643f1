"""Settings of the comparison, normally read from ``[tool.perfbot]`` (see bot.config)."""
from __future__ import annotations

from dataclasses import dataclass, field

from bot.config import PerfbotConfig, load_config


@dataclass(frozen=True)
class CompareConfig:
    threshold_pct: float = 3.0            # default per-row threshold, percent
    thresholds: dict[str, float] = field(default_factory=dict)  # per-row overrides
    alpha: float = 0.01                   # one-sided level of the rank test
    min_history: int = 5                  # past runs needed before the noise band counts
    min_samples: int = 3                  # fewer on a side: plain threshold, no statistics
    outlier_k: float = 5.0                # hiccup screen: robust SDs from the side's median
    band_z: float = 2.0                   # noise band = band_z * sqrt(2) * sd of past medians
    interval_level: float = 0.95          # two-sided level of the median-ratio interval
    bootstrap: int = 2000                 # resamples for the interval of the median ratio
    seed: int = 20261129                  # fixed, so a comparison is reproducible

    @classmethod
    def from_perfbot(cls, config: PerfbotConfig, **overrides) -> "CompareConfig":
        values = {"threshold_pct": config.threshold_pct, "thresholds": dict(config.thresholds),
                  "alpha": config.alpha, "min_history": config.min_history}
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_pyproject(cls, path=None, **overrides) -> "CompareConfig":
        """``[tool.perfbot]`` of ``path`` or of the nearest pyproject.toml."""
        return cls.from_perfbot(load_config(path), **overrides)

    def threshold_for(self, name: str, batch: int | None = None, mode: str | None = None) -> float:
        return PerfbotConfig(self.threshold_pct, self.thresholds).threshold_for(name, batch, mode)
