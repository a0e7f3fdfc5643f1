"""Two runs on a machine whose own speed moved between them: the reference workload timed next to
every sample (``reference_rate``) tells the machine's shift from the program's, so a same-commit
pair is not flagged while a real slowdown on a steady machine still is; per-process compile times
and peaks judge those figures by their spread."""
from __future__ import annotations

import numpy as np

from bot import results_doc
from bot.compare import CompareConfig
from bot.compare.machine_shift import machine_shift_pct, reference_rates, relative_rates
from bot.compare.results import compare_results

BASE, HEAD = "a" * 40, "b" * 40


def _row(name, rate, reference, *, processes=5, per=6, seed=0, noise_pct=0.5, process_sd=0.02, tracking=1.0,
         **extra):
    """A --rounds row: ``processes`` worker processes of ``per`` samples, each sample followed by
    a reference figure. Each process has a speed of its own (the machine's, at that time) that
    moves the samples and, by ``tracking``, the reference with them."""
    rng = np.random.default_rng(seed)
    samples, blocks, conditions = [], [], []
    for block in range(processes):
        speed = 1 + rng.normal(0, process_sd)
        for _ in range(per):
            samples.append(float(rate * speed * (1 + rng.normal(0, noise_pct / 100))))
            ref = reference * (1 + tracking * (speed - 1)) * (1 + rng.normal(0, noise_pct / 100))
            conditions.append({"others_cpu_pct": 1.0, "reference_rate": float(ref)})
            blocks.append(block)
    medians = [np.median([s for s, b in zip(samples, blocks) if b == k]) for k in range(processes)]
    row = {"name": name, "batch": 1, "mode": "fp32", "status": "ok", "error": None,
           "rate": float(np.median(medians)), "samples": samples, "blocks": blocks,
           "conditions": conditions, "compile_s": 0.5, "peak_mem_bytes": 200 << 20, "accuracy": None}
    row.update(extra)
    return row


def _compare(base_rows, head_rows, doc_factory, mode="run"):
    measurement = {"rate": "host", "sample": "autorange", "mode": mode}
    doc = compare_results(doc_factory(base_rows, commit=BASE, measurement=measurement),
                          doc_factory(head_rows, commit=HEAD, run_id="run-2", measurement=measurement),
                          CompareConfig())
    results_doc.validate_compare(doc)
    return doc


def test_the_machine_running_slower_is_no_regression(doc_factory):
    # the whole machine 12 % slower in the head run: every row and the reference alike
    base = [_row("a", 1000, 5000, seed=1), _row("b", 300, 5000, seed=2)]
    head = [_row("a", 880, 4400, seed=3), _row("b", 264, 4400, seed=4)]
    doc = _compare(base, head, doc_factory)
    assert [r["mark"] for r in doc["rows"]] == ["ok", "ok"]
    assert all(not r["judged"] and "the machine itself ran 1" in r["reason"] and "% slower" in r["reason"]
               for r in doc["rows"])
    assert doc["rows"][0]["machine_shift_pct"] < -11
    assert any("the machine's own speed moved" in w and "2 of 2 rows" in w for w in doc["warnings"])
    assert doc["verdict"] == "recommended"


def test_an_ab_measures_in_turns_and_judges_the_rates_alone(doc_factory):
    # in an A/B the machine's speed over time falls on both sides; a reference that differs
    # there is the program's doing (what the row left in the caches), not the machine's
    doc = _compare([_row("a", 1000, 5000, seed=1)], [_row("a", 880, 4400, seed=3)], doc_factory, mode="ab")
    [row] = doc["rows"]
    assert row["mark"] == "regression" and row["machine_shift_pct"] is None


def test_a_slower_program_on_a_steady_machine_is_flagged(doc_factory):
    doc = _compare([_row("a", 1000, 5000, seed=1)], [_row("a", 900, 5000, seed=3)], doc_factory)
    [row] = doc["rows"]
    assert row["mark"] == "regression" and row["judged"]
    assert abs(row["machine_shift_pct"]) < 1
    assert doc["verdict"] == "not-recommended"


def test_a_change_that_the_machine_s_speed_explains_is_not_flagged(doc_factory):
    # the machine 2.5 % slower (under the 3 % threshold) and the row 4 % slower: relative to the
    # machine the row moved 1.5 %, below the threshold
    steady = {"noise_pct": 0.2, "process_sd": 0.002}
    doc = _compare([_row("a", 1000, 5000, seed=1, **steady)], [_row("a", 960, 4875, seed=3, **steady)],
                   doc_factory)
    [row] = doc["rows"]
    assert row["mark"] == "ok" and row["judged"]
    assert "relative to the machine's own speed" in row["reason"]


def test_rows_without_a_reference_are_judged_as_before(doc_factory):
    base, head = _row("a", 1000, 5000, seed=1), _row("a", 880, 4400, seed=3)
    for row in (base, head):
        row["conditions"] = [{"others_cpu_pct": 1.0} for _ in row["samples"]]
    assert machine_shift_pct(base, head) is None and reference_rates(base) is None
    [row] = _compare([base], [head], doc_factory)["rows"]
    assert row["mark"] == "regression" and row["machine_shift_pct"] is None


def test_relative_rates_pair_each_sample_with_the_reference_after_it():
    row = {"samples": [10.0, 20.0, 30.0], "blocks": [0, 0, 1],
           "conditions": [{"reference_rate": 5.0}, {"reference_rate": 10.0}, {"reference_rate": 3.0}]}
    assert relative_rates(row) == [2.0, 10.0]
    assert reference_rates(row) == [7.5, 3.0]
    row["conditions"][1] = None      # a sample without its reference: no relative figure at all
    assert relative_rates(row) is None


def test_per_process_figures_judge_compile_time_and_memory_by_their_spread(doc_factory):
    # one commit, peaks that wander by a quarter between processes: the highest differ by 20 %,
    # yet the processes overlap, so nothing is flagged
    base = _row("a", 1000, 5000, seed=1, peak_mem_samples=[230 << 20, 290 << 20, 240 << 20, 236 << 20, 250 << 20],
                compile_samples=[0.50, 0.62, 0.48, 0.55, 0.51])
    head = _row("a", 1000, 5000, seed=3, peak_mem_samples=[232 << 20, 228 << 20, 241 << 20, 233 << 20, 235 << 20],
                compile_samples=[0.46, 0.52, 0.49, 0.47, 0.50])
    base["peak_mem_bytes"], head["peak_mem_bytes"] = 290 << 20, 241 << 20
    base["compile_s"], head["compile_s"] = 0.62, 0.46
    [row] = _compare([base], [head], doc_factory)["rows"]
    assert row["peak_mem_diff_pct"] < -10 and row["peak_mem_mark"] == "ok"
    assert row["compile_diff_pct"] < -25 and row["compile_mark"] == "ok"
    # every head process above every base process: the growth is the program's
    head["peak_mem_samples"] = [v + (100 << 20) for v in base["peak_mem_samples"]]
    head["peak_mem_bytes"] = max(head["peak_mem_samples"])
    [row] = _compare([base], [head], doc_factory)["rows"]
    assert row["peak_mem_mark"] == "regression"
