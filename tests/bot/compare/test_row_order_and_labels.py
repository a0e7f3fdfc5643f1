"""The comparison against its written requirements: rows stay in the suite's order,
the terminal table labels and signs like the PR comment, error notes read cleanly."""
from __future__ import annotations

from bot.compare import CompareConfig, compare_results
from reports.compare_table import render_text
from reports.markdown import render_performance

CONFIG = CompareConfig()


def _names(doc):
    return [row["name"] for row in doc["rows"]]


def test_rows_missing_from_the_head_keep_their_place_in_the_suite(row_factory, doc_factory):
    suite = ["a", "b", "c", "d", "e"]
    base = doc_factory([row_factory(n, seed=i) for i, n in enumerate(suite)])
    head = doc_factory([row_factory(n, seed=10 + i) for i, n in enumerate(suite) if n not in ("a", "c")])
    doc = compare_results(base, head, CONFIG)
    assert _names(doc) == suite
    assert {r["name"]: r["mark"] for r in doc["rows"]}["c"] == "error"
    # a row only the head has stays in the head's order; a base-only one follows its base predecessor
    head = doc_factory([row_factory(n, seed=20 + i) for i, n in enumerate(["b", "new", "d"])])
    assert _names(compare_results(base, head, CONFIG)) == ["a", "b", "c", "new", "d", "e"]


def test_terminal_table_labels_fp16_once_signs_the_diff_and_names_the_mark_column(row_factory, doc_factory):
    base = doc_factory([row_factory("resnet50_fp16", 1000.0, mode="fp16", seed=1),
                        row_factory("tiny", 1000.0, mode="fp16", seed=2)])
    head = doc_factory([row_factory("resnet50_fp16", 1100.0, mode="fp16", seed=3),
                        row_factory("tiny", 1000.0, mode="fp16", seed=2)])
    text = render_text(compare_results(base, head, CONFIG), width=200)
    assert "resnet50_fp16_fp16" not in text and "resnet50_fp16" in text
    assert "tiny_fp16" in text
    assert "Compare" in text.splitlines()[1] + text.splitlines()[2]
    doc = compare_results(base, head, CONFIG)
    diff = doc["rows"][0]["diff_pct"]
    assert diff > 0 and f"+{diff:.2f}%" in text
    assert "+0.00%" in text  # identical samples: a change of zero, written with its sign


def test_error_notes_have_no_dangling_comma(row_factory, doc_factory):
    base = doc_factory([row_factory("a"), row_factory("b")])
    head = doc_factory([row_factory("a", status="error", error="worker crashed (SIGSEGV)")])
    out = render_performance(compare_results(base, head, CONFIG))
    notes = [line for line in out.splitlines() if line.startswith("- ")]
    assert notes == ["- ❌ **a** (batch 1, fp32): threshold 3%; head: worker crashed (SIGSEGV)",
                     "- ❌ **b** (batch 1, fp32): threshold 3%; missing in the head run"]


def test_compare_markdown_shows_the_accuracy_failure_behind_its_verdict(row_factory, doc_factory,
                                                                        tmp_path, capsys):
    import json

    from bot.cli import main

    base = doc_factory([row_factory("a", seed=1), row_factory("b", seed=2)], commit="1" * 40)
    head = doc_factory([row_factory("a", seed=1), row_factory("b", seed=2, accuracy="FAILED")],
                       commit="2" * 40)
    for name, doc in (("base", base), ("head", head)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    code = main(["compare", "--base", str(tmp_path / "base.json"), "--head",
                 str(tmp_path / "head.json"), "--format", "markdown", "--no-history"])
    out = capsys.readouterr().out
    assert code == 1 and "This build is not recommended to merge" in out
    rates = out.split("<!-- perfbot:accuracy -->")[0]
    assert not [line for line in rates.splitlines() if line.startswith("|") and "🔴" in line]
    assert "🔴 b: FAILED: not within tolerance" in out and "<details>" in out
