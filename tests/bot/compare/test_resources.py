"""Compile time and peak memory compared like rates: their own thresholds, floors under which a
change is noise, counted in the verdict and the commit status; flagged rows get a repro command."""
from __future__ import annotations

import pytest

from bot import results_doc
from bot.compare import CompareConfig
from bot.compare.resources import COMPILE_FLOOR_S, figure_change
from bot.compare.results import compare_results
from bot.config import ConfigError, load_config
from bot.github.verdict import verdict_for

BASE, HEAD = "a" * 40, "b" * 40


@pytest.mark.parametrize("old,new,mark", [
    (1.0, 1.2, "ok"),            # within the 25 % threshold
    (1.0, 1.3, "regression"),    # compiles slower
    (1.0, 0.7, "improvement"),
    (0.01, 0.02, "ok"),          # doubled, but by less than the floor
    (None, 1.0, None),           # a side without the figure
])
def test_a_figure_is_flagged_beyond_its_threshold_and_floor(old, new, mark):
    assert figure_change(old, new, 25.0, COMPILE_FLOOR_S)[1] == mark


def _docs(row_factory, doc_factory, head_compile=1.5, head_mem=123456 << 10):
    base = doc_factory([row_factory("a", seed=1, peak_mem_bytes=123456 << 10),
                        row_factory("b", seed=2, peak_mem_bytes=123456 << 10)], commit=BASE)
    head = doc_factory([row_factory("a", seed=3, compile_s=head_compile, peak_mem_bytes=head_mem),
                        row_factory("b", seed=4, peak_mem_bytes=123456 << 10)],
                       commit=HEAD, run_id="run-2")
    return base, head


def test_a_slower_compile_flags_the_row_and_the_verdict(row_factory, doc_factory):
    doc = compare_results(*_docs(row_factory, doc_factory, head_compile=3.0), CompareConfig())
    results_doc.validate_compare(doc)
    a, b = doc["rows"]
    assert (a["mark"], a["compile_mark"], a["peak_mem_mark"]) == ("ok", "regression", "ok")
    assert a["compile_diff_pct"] == pytest.approx(100.0)
    assert b["compile_mark"] == b["peak_mem_mark"] == "ok"
    assert doc["summary"]["compile_regressions"] == 1 and doc["summary"]["peak_mem_regressions"] == 0
    assert doc["verdict"] == "not-recommended"
    assert verdict_for(doc, "performance").description == "not recommended to merge: 1 compile slower"
    assert a["repro"] == f"perfbot ab --base {BASE} --head {HEAD} --suite a --target cpu"
    assert b["repro"] is None


def test_more_memory_flags_the_row_less_memory_is_an_improvement(row_factory, doc_factory):
    grown = compare_results(*_docs(row_factory, doc_factory, head_mem=200000 << 10), CompareConfig())
    assert grown["rows"][0]["peak_mem_mark"] == "regression"
    assert "1 use more memory" in verdict_for(grown, "performance").description
    shrunk = compare_results(*_docs(row_factory, doc_factory, head_mem=50000 << 10), CompareConfig())
    assert shrunk["rows"][0]["peak_mem_mark"] == "improvement"
    assert shrunk["verdict"] == "recommended"


def test_the_thresholds_come_from_pyproject(tmp_path, row_factory, doc_factory):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.perfbot]\ncompile_threshold_pct = 150\nmemory_threshold_pct = 2.5\n")
    with pytest.raises(ConfigError, match="compile_threshold_pct"):
        load_config(path)
    path.write_text("[tool.perfbot]\ncompile_threshold_pct = 99\nmemory_threshold_pct = 2.5\n")
    config = CompareConfig.from_pyproject(path)
    assert (config.compile_threshold_pct, config.memory_threshold_pct) == (99.0, 2.5)
    doc = compare_results(*_docs(row_factory, doc_factory, head_compile=2.9), config)
    assert doc["rows"][0]["compile_mark"] == "ok" and doc["verdict"] == "recommended"
    assert doc["settings"]["memory_threshold_pct"] == 2.5


def test_a_hostile_row_name_is_shell_quoted_in_the_repro(row_factory, doc_factory):
    base, head = _docs(row_factory, doc_factory, head_compile=9.0)
    for doc in (base, head):
        doc["rows"][0]["name"] = "x; rm -rf ~"
    row = compare_results(base, head, CompareConfig())["rows"][0]
    assert row["repro"].endswith("--suite 'x; rm -rf ~' --target cpu")


def test_figures_of_a_row_whose_rate_is_not_judged_are_not_flagged(row_factory, doc_factory):
    """A compile twice as slow on a machine other work kept busy: measured in the same processes
    as the rate the compare would not judge there, so it is reported, not flagged."""
    base, head = _docs(row_factory, doc_factory, head_compile=3.0, head_mem=200000 << 10)
    head["rows"][0]["conditions"] = [{"others_cpu_pct": 60.0}] * len(head["rows"][0]["samples"])
    doc = compare_results(base, head, CompareConfig())
    a = doc["rows"][0]
    assert a["judged"] is False and a["compile_diff_pct"] == pytest.approx(100.0)
    assert a["compile_mark"] == a["peak_mem_mark"] == "ok"
    assert doc["verdict"] == "recommended"
