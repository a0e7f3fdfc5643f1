"""Compare marks on constructed sample sets: no crying wolf, real slowdowns caught."""
from __future__ import annotations

import numpy as np
import pytest

from bot.compare import CompareConfig, compare_results, needs_remeasure
from bot.results_doc import validate_compare

CONFIG = CompareConfig(threshold_pct=3.0)


def _row(name, rate, samples, **extra):
    return {"name": name, "batch": 1, "mode": "fp32", "status": "ok", "error": None,
            "rate": float(np.median(samples)), "samples": [float(s) for s in samples],
            "compile_s": 1.0, "peak_mem_bytes": 1000,
            "accuracy": {"status": "PASSED", "rtol": 1e-3, "atol": 1e-3}, **extra}


def _noisy(rate, noise_pct, seed, n=10):
    return rate * (1 + np.random.default_rng(seed).normal(0, noise_pct / 100, n))


def _compare(base_rows, head_rows, doc_factory, config=CONFIG, history=None):
    base = doc_factory(base_rows, run_id="base", commit="a" * 40)
    head = doc_factory(head_rows, run_id="head", commit="b" * 40)
    doc = compare_results(base, head, config, history)
    validate_compare(doc)
    return doc


def test_noise_only_is_all_ok(doc_factory):
    names = [f"model-{i}" for i in range(40)]
    base = [_row(n, 1000, _noisy(1000, 1.0, seed=i)) for i, n in enumerate(names)]
    head = [_row(n, 1000, _noisy(1000, 1.0, seed=100 + i)) for i, n in enumerate(names)]
    doc = _compare(base, head, doc_factory)
    assert [r["mark"] for r in doc["rows"]] == ["ok"] * 40
    assert doc["verdict"] == "recommended"
    # A 3 %-noise row whose medians differ by 4 % on noise alone: a plain 3 % threshold cries wolf.
    noisy_base = [_row("n", 1000, _noisy(1000, 3.0, seed=60))]
    noisy_head = [_row("n", 1000, _noisy(1000, 3.0, seed=1060))]
    noisy = _compare(noisy_base, noisy_head, doc_factory)["rows"][0]
    assert noisy["diff_pct"] < -3.0 and noisy["mark"] == "ok"  # fixed 3 % would cry wolf here


def test_clear_ten_percent_slowdown_is_red(doc_factory):
    base = [_row("resnet50", 900, _noisy(900, 1.0, seed=1))]
    head = [_row("resnet50", 810, _noisy(810, 1.0, seed=2))]
    doc = _compare(base, head, doc_factory)
    row = doc["rows"][0]
    assert row["mark"] == "regression" and doc["verdict"] == "not-recommended"
    assert row["diff_pct"] == pytest.approx(-10, abs=1.5)
    assert row["p_value"] < CONFIG.alpha and row["ci_high_pct"] < 0
    assert (row["n_new"], row["n_old"], row["threshold_pct"]) == (10, 10, 3.0)
    assert row["compile_s_new"] == 1.0 and row["peak_mem_old"] == 1000
    assert needs_remeasure(row)


def test_clear_gain_is_highlighted_and_fine(doc_factory):
    doc = _compare([_row("bert", 700, _noisy(700, 1.0, seed=3))],
                   [_row("bert", 770, _noisy(770, 1.0, seed=4))], doc_factory)
    assert doc["rows"][0]["mark"] == "improvement" and doc["verdict"] == "recommended"


def test_one_hiccup_sample_does_not_make_a_regression(doc_factory):
    head_samples = _noisy(1000, 1.0, seed=6)
    head_samples[3] *= 0.6  # a clock hiccup
    doc = _compare([_row("m", 1000, _noisy(1000, 1.0, seed=5))], [_row("m", 1000, head_samples)],
                   doc_factory)
    assert doc["rows"][0]["mark"] == "ok" and doc["rows"][0]["outliers_new"] == 1


AGENTMODEL_PAST = 5857.27 * (1 + np.array([0.031, -0.024, 0.012, -0.035, 0.028, -0.009, 0.04, -0.03]))


def _agentmodel_case(noise_pct=1.5):
    # The reference table's agentmodel: 5,857 → 5,582 (−4.71 %), a row whose runs swing widely.
    base = _row("agentmodel", 5857.27, _noisy(5857.27, noise_pct, seed=11))
    head = _row("agentmodel", 5581.60, _noisy(5581.60, noise_pct, seed=12))
    history = {("agentmodel", 1, "fp32"): [{"rate": float(r)} for r in AGENTMODEL_PAST]}
    return base, head, history


def test_agentmodel_drop_with_its_noise_and_history_is_not_red(doc_factory):
    base, head, history = _agentmodel_case(noise_pct=3.5)
    row = _compare([base], [head], doc_factory, history=history)["rows"][0]
    assert row["diff_pct"] < -3.0  # a fixed 3 % threshold flags this
    assert row["mark"] == "ok" and row["reason"]


def test_history_noise_band_alone_keeps_a_significant_drop_from_red(doc_factory):
    # Quiet samples make the drop significant; only the row's swinging history says "noise".
    base, head, history = _agentmodel_case(noise_pct=1.5)
    row = _compare([base], [head], doc_factory, history=history)["rows"][0]
    assert row["p_value"] < CONFIG.alpha
    assert row["mark"] == "ok" and "noise band" in row["reason"]
    assert row["noise_band_pct"] > abs(row["diff_pct"])
    assert needs_remeasure(row)  # the A/B runner would still take more samples
    assert _compare([base], [head], doc_factory)["rows"][0]["mark"] == "regression"
    # A short history (fewer than min_history runs) is not trusted to set a band.
    short = {k: v[:3] for k, v in history.items()}
    assert _compare([base], [head], doc_factory, history=short)["rows"][0]["mark"] == "regression"


def test_per_row_threshold_applies(doc_factory):
    # 4 % slower with 0.5 % noise: 🔴 at the global 3 %, fine where the row allows 6 %.
    base = [_row("agentmodel", 1000, _noisy(1000, 0.5, seed=13))]
    head = [_row("agentmodel", 960, _noisy(960, 0.5, seed=14))]
    assert _compare(base, head, doc_factory)["rows"][0]["mark"] == "regression"
    config = CompareConfig(threshold_pct=3.0, thresholds={"agentmodel": 6.0})
    row = _compare(base, head, doc_factory, config=config)["rows"][0]
    assert row["threshold_pct"] == 6.0 and row["mark"] == "ok"


def test_errors_and_missing_rows_are_crosses(doc_factory, row_factory):
    base = [row_factory("a", seed=1), row_factory("b", seed=2), row_factory("gone", seed=3),
            row_factory("c", status="error", error="worker crashed (SIGSEGV)")]
    head = [row_factory("new", seed=4), row_factory("a", status="error", error="timed out after 600 s"),
            row_factory("b", seed=5), row_factory("c", seed=6)]
    doc = _compare(base, head, doc_factory)
    rows = {r["name"]: r for r in doc["rows"]}
    # suite order: a row the head lost stays after the row that precedes it in the base run
    assert [r["name"] for r in doc["rows"]] == ["new", "a", "b", "gone", "c"]
    assert rows["new"]["reason"] == "missing in the base run"
    assert rows["gone"]["reason"] == "missing in the head run"
    assert rows["a"]["reason"] == "head: timed out after 600 s"
    assert rows["c"]["reason"] == "base: worker crashed (SIGSEGV)"
    assert [rows[n]["mark"] for n in ("new", "a", "b", "c", "gone")] == \
        ["error", "error", "ok", "error", "error"]
    assert doc["verdict"] == "not-recommended"
    acc = {a["name"]: a for a in doc["accuracy"]}
    assert acc["a"]["status"] == "ERROR" and acc["a"]["error"] == "timed out after 600 s"
    assert acc["b"]["status"] == "PASSED" and acc["b"]["worst_index"] == [0, 3]


def test_accuracy_failure_alone_makes_not_recommended(doc_factory, row_factory):
    doc = _compare([row_factory("dpn92", seed=1)], [row_factory("dpn92", seed=2, accuracy="FAILED")],
                   doc_factory)
    assert doc["rows"][0]["mark"] == "ok"
    assert doc["accuracy"][0]["status"] == "FAILED" and doc["verdict"] == "not-recommended"
    assert doc["summary"]["accuracy_failures"] == 1


def test_too_few_samples_are_never_flagged(doc_factory):
    doc = _compare([_row("m", 100, [100.0, 100.0]), _row("k", 100, [100.0])],
                   [_row("m", 90, [90.0, 90.0]), _row("k", 99, [99.0])], doc_factory)
    marks = [(r["mark"], r["p_value"]) for r in doc["rows"]]
    assert marks == [("ok", None), ("ok", None)]
    assert "not enough independent samples" in doc["rows"][0]["reason"]
    assert doc["verdict"] == "recommended"


def test_samples_of_one_process_are_one_block(doc_factory):
    """Ten samples from one worker process each: a 30 % gap between the two processes is
    not evidence about the revisions, and compare says so instead of flagging it."""
    base = _row("bert", 100, _noisy(100, 0.5, seed=7), blocks=[0] * 10)
    head = _row("bert", 165, _noisy(165, 0.5, seed=8), blocks=[0] * 10)
    row = _compare([base], [head], doc_factory)["rows"][0]
    assert row["mark"] == "ok" and row["p_value"] is None
    assert row["reason"].startswith("one process per side: not enough independent samples")
    assert (row["blocks_old"], row["blocks_new"]) == (1, 1)


def test_blocks_are_tested_by_their_medians(doc_factory):
    """Eight processes a side, three samples each: the test sees eight values a side."""
    blocks = [b for b in range(8) for _ in range(3)]
    base = _row("r", 1000, _noisy(1000, 0.3, seed=9, n=24), blocks=blocks)
    head = _row("r", 900, _noisy(900, 0.3, seed=10, n=24), blocks=blocks)
    row = _compare([base], [head], doc_factory)["rows"][0]
    assert row["mark"] == "regression" and (row["blocks_old"], row["blocks_new"]) == (8, 8)
    assert 1 / 12870 <= row["p_value"] < CONFIG.alpha   # 8 against 8: the rank test's floor


def test_unreliable_measurements_are_not_flagged(doc_factory):
    base = [_row("m", 900, _noisy(900, 1.0, seed=1))]
    head = [_row("m", 810, _noisy(810, 1.0, seed=2),
                 unreliable="GPU throttled (hw_thermal) in 3 of 10 samples")]
    doc = _compare(base, head, doc_factory)
    row = doc["rows"][0]
    assert row["mark"] == "ok" and row["reason"].startswith("measurement unreliable, not judged")
    assert doc["summary"]["unreliable"] == 1 and doc["verdict"] == "recommended"


def test_small_significant_drop_below_threshold_is_ok(doc_factory):
    # 1 % slower with 0.2 % noise: real, significant, but far from the 3 % threshold.
    doc = _compare([_row("m", 1000, _noisy(1000, 0.2, seed=31, n=30))],
                   [_row("m", 990, _noisy(990, 0.2, seed=32, n=30))], doc_factory)
    row = doc["rows"][0]
    assert row["p_value"] < 0.001 and row["mark"] == "ok" and not needs_remeasure(row)


def test_remeasured_flag_and_history_string_keys_pass_through(doc_factory):
    base, head, history = _agentmodel_case()
    head["remeasured"] = True
    by_string = {"agentmodel/1/fp32": history[("agentmodel", 1, "fp32")]}
    row = _compare([base], [head], doc_factory, history=by_string)["rows"][0]
    assert row["remeasured"] is True and row["noise_band_pct"] is not None


def test_comparison_is_deterministic(doc_factory):
    base = [_row("m", 1000, _noisy(1000, 2.0, seed=41))]
    head = [_row("m", 970, _noisy(970, 2.0, seed=42))]
    assert _compare(base, head, doc_factory) == _compare(base, head, doc_factory)
