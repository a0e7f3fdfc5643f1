"""Base against head per instruction: movers ordered by time added, a lost fusion as kernels
that vanished and appeared, launch counts; only flagged rows whose sides were profiled."""
from __future__ import annotations

from bot import results_doc
from bot.compare import CompareConfig
from bot.compare.profile_diff import profile_diff
from bot.compare.results import compare_results


def _entry(name, op, us, calls=1):
    return {"root": "main", "name": name, "op": op, "calls": calls, "mean_us": us}


FUSED = [_entry("conv1", "fused_conv", 50.0), _entry("fc", "MatMul", 20.0), _entry("head", "Softmax", 5.0)]
UNFUSED = [_entry("conv1", "Conv", 45.0), _entry("relu1", "Relu", 15.0),
           _entry("fc", "MatMul", 21.0), _entry("head", "Softmax", 5.0)]


def test_a_lost_fusion_shows_as_appeared_and_vanished_kernels():
    diff = profile_diff(FUSED, UNFUSED)
    assert [(m["name"], m["op"]) for m in diff["movers"][:3]] == [
        ("conv1", "Conv"), ("relu1", "Relu"), ("fc", "MatMul")]
    assert [a["name"] for a in diff["appeared"]] == ["conv1", "relu1"]
    assert [(v["name"], v["op"]) for v in diff["vanished"]] == [("conv1", "fused_conv")]
    assert (diff["launches_old"], diff["launches_new"]) == (3, 4)
    assert (diff["total_old_us"], diff["total_new_us"]) == (75.0, 86.0)


def test_a_slowed_kernel_comes_first_and_a_faster_row_lists_savings_first():
    slowed = [dict(e, mean_us=e["mean_us"] * (4 if e["name"] == "fc" else 1)) for e in FUSED]
    assert profile_diff(FUSED, slowed)["movers"][0]["name"] == "fc"
    assert profile_diff(slowed, FUSED, slower=False)["movers"][0]["delta_us"] == -60.0


def test_only_flagged_profiled_rows_get_a_diff(row_factory, doc_factory):
    base = doc_factory([row_factory("a", 100.0, seed=1, profile=FUSED),
                        row_factory("b", 100.0, seed=2, profile=FUSED),
                        row_factory("c", 100.0, seed=3)])
    head = doc_factory([row_factory("a", 80.0, seed=4, profile=UNFUSED),
                        row_factory("b", 100.0, seed=5, profile=UNFUSED),
                        row_factory("c", 80.0, seed=6)], commit="b" * 40, run_id="run-2")
    results_doc.validate_results(base) and results_doc.validate_results(head)
    doc = compare_results(base, head, CompareConfig())
    results_doc.validate_compare(doc)
    a, b, c = doc["rows"]
    assert a["mark"] == c["mark"] == "regression" and b["mark"] == "ok"
    assert a["profile_diff"]["appeared"][0]["name"] == "conv1"
    assert b["profile_diff"] is None and c["profile_diff"] is None


def test_kernels_that_vanished_or_appeared_are_listed_costliest_first():
    # a lost attention fusion: the fused kernel and a dozen zero-time views gone, products come
    views = [_entry(f"view{i}", "Reshape", 0.0) for i in range(12)]
    old = [_entry("attn", "Attention", 70.0), *views, _entry("fc", "MatMul", 20.0)]
    new = [_entry("qk", "MatMul", 33.0), _entry("soft", "Softmax", 9.0), _entry("idle", "Reshape", 0.0),
           _entry("fc", "MatMul", 20.0)]
    diff = profile_diff(old, new)
    assert diff["vanished"][0]["name"] == "attn"
    assert [a["name"] for a in diff["appeared"][:2]] == ["qk", "soft"]
