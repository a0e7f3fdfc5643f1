"""[tool.perfbot] thresholds: global, per row, patterns, defaults, bad values."""
from __future__ import annotations

import pytest

from bot.compare import CompareConfig
from bot.config import ConfigError, PerfbotConfig, load_config
from tests.paths import ROOT


def _pyproject(tmp_path, body: str):
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\n\n" + body, encoding="utf-8")
    return path


def test_global_and_per_row_thresholds(tmp_path):
    path = _pyproject(tmp_path, """
[tool.perfbot]
threshold_pct = 2.5
alpha = 0.005

[tool.perfbot.thresholds]
agentmodel = 6.0
"unet_fp16" = 5
"resnet50/64/fp32" = 4.0
"torchvision-*" = 3.5
""")
    config = CompareConfig.from_pyproject(path)
    assert config.alpha == 0.005
    assert config.threshold_for("agentmodel", 1, "fp32") == 6.0
    assert config.threshold_for("unet", 2, "fp16") == 5.0
    assert config.threshold_for("unet", 2, "fp32") == 2.5
    assert config.threshold_for("resnet50", 64, "fp32") == 4.0
    assert config.threshold_for("resnet50", 1, "fp32") == 2.5
    assert config.threshold_for("torchvision-densenet121", 32, "fp16") == 3.5


def test_defaults_without_table_and_nearest_pyproject_is_found(tmp_path, monkeypatch):
    _pyproject(tmp_path, "")
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "sub" / "dir")
    assert load_config() == PerfbotConfig(source=str(tmp_path / "pyproject.toml"))
    assert CompareConfig.from_pyproject().threshold_pct == 3.0


def test_the_repository_pyproject_sets_three_percent():

    root = ROOT / "pyproject.toml"
    assert load_config(root).threshold_pct == 3.0


@pytest.mark.parametrize("body, fragment", [
    ("[tool.perfbot]\nthreshold_pct = 'three'", "threshold_pct"),
    ("[tool.perfbot]\nthreshold_pct = -1", "between 0 and 100"),
    ("[tool.perfbot]\nalpha = 0.9", "alpha"),
    ("[tool.perfbot]\nthresholds = 3", "thresholds"),
    ("[tool.perfbot.thresholds]\nagentmodel = true", "thresholds.agentmodel"),
    ("[tool.perfbot]\nmin_history = 1", "min_history"),
    ("[tool.perfbot]\nbusy_limit_pct = 0", "busy_limit_pct"),
    ("[tool.perfbot]\nbusy_limit_pct = 101", "busy_limit_pct"),
    ("[tool.perfbot]\nbusy_limit_pct = nan", "busy_limit_pct"),
    ("[tool.perfbot\nthreshold_pct = 3", "not valid TOML"),
])
def test_bad_config_is_one_clear_line(tmp_path, body, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        load_config(_pyproject(tmp_path, body))
    assert "\n" not in str(info.value)


def test_busy_limit_reaches_the_comparison(tmp_path):
    assert CompareConfig.from_pyproject(_pyproject(tmp_path, "[tool.perfbot]")).busy_limit_pct == 10.0
    config = CompareConfig.from_pyproject(_pyproject(tmp_path, "[tool.perfbot]\nbusy_limit_pct = 100"))
    assert config.busy_limit_pct == 100.0
