"""perfbot's settings from ``[tool.perfbot]`` in pyproject.toml.

    [tool.perfbot]
    threshold_pct = 3.0          # a row must slow down (or speed up) by this much to be flagged
    alpha = 0.01                 # one-sided significance level of the rank test
    min_history = 5              # past base-branch runs needed before their noise band counts
    busy_limit_pct = 10.0        # host targets: other work's share of the CPUs during a row's
                                 #   samples above which the row is not judged (100: never)
    db_url = "sqlite:///.perfbot/results.db"
    compile_threshold_pct = 25.0 # a row's compile time must grow (or shrink) by this much to be flagged
    memory_threshold_pct = 10.0  # the same for its peak memory

    [tool.perfbot.thresholds]    # per-row overrides, looked up in this order:
    "agentmodel" = 6.0           #   "<name>/<batch>/<mode>", "<name>_<mode>", "<name>",
    "torchvision-*" = 4.0        #   then shell-style patterns on the name, first match wins

Other keys (and sub-tables) belong to other parts of perfbot and are left alone here; the keys
read here are checked and a bad value is one clear line.
"""
from __future__ import annotations

import fnmatch
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from common.errors import UserError

DEFAULT_THRESHOLD_PCT = 3.0
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_HISTORY = 5
# Other work's share of all CPUs (mean over a row's samples) above which a host-target row is not
# judged. A quiet machine's daemons take 1-3 %; a second job on a 2-core machine 50 % or more.
DEFAULT_BUSY_LIMIT_PCT = 10.0
# Compile time and peak memory are one figure a side (the first compile, the highest peak), not
# samples a rank test could judge, so their thresholds are wider than the rate's: a compile's
# time moves by 10-15 % between two processes of one commit on a shared machine.
DEFAULT_COMPILE_THRESHOLD_PCT = 25.0
DEFAULT_MEMORY_THRESHOLD_PCT = 10.0


class ConfigError(UserError):
    """``[tool.perfbot]`` is malformed."""


@dataclass(frozen=True)
class PerfbotConfig:
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    thresholds: dict[str, float] = field(default_factory=dict)
    alpha: float = DEFAULT_ALPHA
    min_history: int = DEFAULT_MIN_HISTORY
    db_url: str | None = None
    source: str | None = None  # the pyproject.toml it came from, for messages
    busy_limit_pct: float = DEFAULT_BUSY_LIMIT_PCT
    compile_threshold_pct: float = DEFAULT_COMPILE_THRESHOLD_PCT
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT

    def threshold_for(self, name: str, batch: int | None = None, mode: str | None = None) -> float:
        """The threshold (percent) of one suite row."""
        found = self.row_threshold(name, batch, mode)
        return self.threshold_pct if found is None else found

    def row_threshold(self, name: str, batch: int | None = None, mode: str | None = None) -> float | None:
        """The per-row threshold of [tool.perfbot.thresholds] that matches the row, or None."""
        exact = [f"{name}/{batch}/{mode}", f"{name}_{mode}", name]
        for key in exact:
            if key in self.thresholds:
                return self.thresholds[key]
        for pattern, value in self.thresholds.items():
            if any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(name, pattern):
                return value
        return None


def find_pyproject(start: str | Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (default: the working directory)."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _percent(value: object, where: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{source}: {where} in [tool.perfbot] must be a number (percent), "
                          f"not {value!r}")
    if not math.isfinite(value) or value <= 0 or value >= 100:
        raise ConfigError(f"{source}: {where} in [tool.perfbot] must be between 0 and 100 percent, "
                          f"not {value!r}")
    return float(value)


def parse_config(table: dict, source: str = "[tool.perfbot]") -> PerfbotConfig:
    """Build a PerfbotConfig from the ``[tool.perfbot]`` table (already parsed)."""
    threshold = _percent(table.get("threshold_pct", DEFAULT_THRESHOLD_PCT), "threshold_pct", source)
    rows = table.get("thresholds", {})
    if not isinstance(rows, dict):
        raise ConfigError(f"{source}: [tool.perfbot.thresholds] must be a table of name = percent")
    thresholds = {str(k): _percent(v, f"thresholds.{k}", source) for k, v in rows.items()}
    alpha = table.get("alpha", DEFAULT_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise ConfigError(f"{source}: alpha must be a number between 0 and 0.5, not {alpha!r}")
    min_history = table.get("min_history", DEFAULT_MIN_HISTORY)
    if isinstance(min_history, bool) or not isinstance(min_history, int) or min_history < 2:
        raise ConfigError(f"{source}: min_history must be an integer >= 2, not {min_history!r}")
    db_url = table.get("db_url")
    if db_url is not None and not isinstance(db_url, str):
        raise ConfigError(f"{source}: db_url must be a string")
    busy = table.get("busy_limit_pct", DEFAULT_BUSY_LIMIT_PCT)
    if isinstance(busy, bool) or not isinstance(busy, (int, float)) or not 0 < busy <= 100:
        raise ConfigError(f"{source}: busy_limit_pct must be a number above 0 and at most 100 "
                          f"(percent of the CPUs; 100 judges whatever the load), not {busy!r}")
    compile_pct = _percent(table.get("compile_threshold_pct", DEFAULT_COMPILE_THRESHOLD_PCT),
                           "compile_threshold_pct", source)
    memory_pct = _percent(table.get("memory_threshold_pct", DEFAULT_MEMORY_THRESHOLD_PCT),
                          "memory_threshold_pct", source)
    return PerfbotConfig(threshold, thresholds, float(alpha), min_history, db_url, source, float(busy),
                         compile_pct, memory_pct)


def load_config(path: str | Path | None = None) -> PerfbotConfig:
    """Read ``[tool.perfbot]`` from ``path`` or the nearest pyproject.toml; defaults if none."""
    pyproject = Path(path) if path else find_pyproject()
    if pyproject is None:
        return PerfbotConfig()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {pyproject}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{pyproject}: not UTF-8 text, so not valid TOML") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: not valid TOML ({exc})") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: 'tool' must be a table ([tool.perfbot] lives in it)")
    table = tool.get("perfbot", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.perfbot] must be a table")
    return parse_config(table, str(pyproject))
