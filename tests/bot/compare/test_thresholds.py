"""Per-row thresholds: [tool.perfbot.thresholds] first, then the suite manifest's threshold_pct
(documented in models/suite.toml, formerly read but never used), then the global default."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from bot.cli import main
from bot.compare import CompareConfig
from bot.compare.config import manifest_thresholds
from common.errors import UserError


def _row(name, threshold, batch=1, mode="fp32"):
    return SimpleNamespace(name=name, batch=batch, mode=mode, threshold_pct=threshold)


def test_pyproject_rows_then_manifest_rows_then_the_default():
    suite = manifest_thresholds([_row("a", 8.0), _row("b", 6.0), _row("c", None), _row("a", 2.0, mode="fp16")])
    config = CompareConfig(threshold_pct=3.0, thresholds={"b": 4.0, "z*": 5.0}, suite_thresholds=suite)
    assert config.threshold_for("a", 1, "fp32") == 8.0
    assert config.threshold_for("a", 1, "fp16") == 2.0
    assert config.threshold_for("b", 1, "fp32") == 4.0   # the project's setting wins
    assert config.threshold_for("c", 1, "fp32") == 3.0
    assert config.threshold_for("zed", 1, "fp32") == 5.0


@pytest.mark.parametrize("value", [0.0, 100.0, 250.0])
def test_a_manifest_threshold_outside_0_100_is_one_line(value):
    with pytest.raises(UserError, match=r"manifest row 'a': threshold_pct must be between 0 and 100"):
        manifest_thresholds([_row("a", value)])


MANIFEST = """
[suites]
smoke = ["a", "b"]

[[rows]]
name = "a"
builder = "agent"
batch = 1
mode = "fp32"
threshold_pct = 9.5

[[rows]]
name = "b"
builder = "agent"
batch = 1
mode = "fp32"
"""


def test_compare_and_report_use_the_manifest_thresholds(tmp_path, monkeypatch, capsys,
                                                       row_factory, doc_factory):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.perfbot]\nthreshold_pct = 3.0\n")
    (tmp_path / "suite.toml").write_text(MANIFEST)
    rows = [row_factory("a", seed=1), row_factory("b", seed=2)]
    (tmp_path / "base.json").write_text(json.dumps(doc_factory(rows)))
    (tmp_path / "head.json").write_text(json.dumps(doc_factory(rows)))
    sides = ["--base", "base.json", "--head", "head.json", "--format", "json"]
    assert main(["compare", *sides, "--manifest", "suite.toml"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["name"]: r["threshold_pct"] for r in doc["rows"]} == {"a": 9.5, "b": 3.0}
    assert main(["report", *sides, "--manifest", "suite.toml"]) == 0
    doc = json.loads(capsys.readouterr().out)["compare"]
    assert {r["name"]: r["threshold_pct"] for r in doc["rows"]} == {"a": 9.5, "b": 3.0}
    assert main(["compare", *sides]) == 0  # the packaged manifest has no row named a or b
    doc = json.loads(capsys.readouterr().out)
    assert {r["name"]: r["threshold_pct"] for r in doc["rows"]} == {"a": 3.0, "b": 3.0}
