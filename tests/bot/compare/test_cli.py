"""perfbot compare end to end: sides by run id, commit or file; history from the store;
formats; exit codes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bot.cli import main
from bot.results_doc import validate_compare
from bot.store import open_store

BASE_SHA, HEAD_SHA = "ba5e" + "0" * 36, "dead" + "1" * 36


def _row(name, rate, noise_pct, seed, **extra):
    samples = rate * (1 + np.random.default_rng(seed).normal(0, noise_pct / 100, 10))
    return {"name": name, "batch": 1, "mode": "fp32", "status": "ok", "rate": float(np.median(samples)),
            "samples": [float(s) for s in samples], "compile_s": 2.0, "peak_mem_bytes": 10,
            "accuracy": {"status": "PASSED", "rtol": 1e-3, "atol": 1e-3}, **extra}


@pytest.fixture
def db(db_url, doc_factory):
    """main has 8 earlier runs (agentmodel swinging ±3-4 %), then base and head runs."""
    swings = [0.031, -0.024, 0.012, -0.035, 0.028, -0.009, 0.04, -0.03]
    with open_store(db_url) as store:
        for day, swing in enumerate(swings, start=1):
            store.import_document(doc_factory(
                [_row("resnet50", 900, 0.5, day), _row("agentmodel", 5857 * (1 + swing), 1.5, 50 + day)],
                run_id=f"past{day}", commit=f"{day:040x}", started=f"2026-10-{day:02d}T10:00:00Z"))
        store.import_document(doc_factory(
            [_row("resnet50", 900, 0.5, 101), _row("agentmodel", 5857, 1.5, 102)],
            run_id="base-run", commit=BASE_SHA, started="2026-11-01T10:00:00Z"))
        store.import_document(doc_factory(
            [_row("resnet50", 901, 0.5, 201), _row("agentmodel", 5582, 1.5, 202)],
            run_id="head-run", commit=HEAD_SHA, branch="feature", started="2026-11-01T11:00:00Z"))
    return db_url


def _compare(capsys, *argv):
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_history_keeps_agentmodel_green_and_exit_zero(db, capsys):
    code, out, _ = _compare(capsys, "--base", "base-run", "--head", HEAD_SHA[:8], "--db", db,
                            "--format", "json")
    doc = validate_compare(json.loads(out))
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["agentmodel"]["diff_pct"] < -4 and rows["agentmodel"]["mark"] == "ok"
    assert "noise band" in rows["agentmodel"]["reason"]
    assert (doc["base"]["run_id"], doc["head"]["commit"]) == ("base-run", HEAD_SHA)
    assert doc["verdict"] == "recommended" and code == 0


def test_without_history_the_drop_is_red_and_exit_one(db, capsys):
    code, out, _ = _compare(capsys, "--base", BASE_SHA[:7], "--head", "head-run", "--db", db,
                            "--format", "json", "--no-history")
    doc = json.loads(out)
    assert {r["name"]: r["mark"] for r in doc["rows"]} == {"resnet50": "ok", "agentmodel": "regression"}
    assert code == 1


def test_files_as_sides_and_text_and_markdown(db, capsys, tmp_path):
    for run_id in ("base-run", "head-run"):
        assert main(["results", "export", run_id, "--out", str(tmp_path / f"{run_id}.json"),
                     "--db", db]) == 0
    capsys.readouterr()
    out_file = tmp_path / "cmp.txt"
    code, out, _ = _compare(capsys, "--base", str(tmp_path / "base-run.json"), "--head",
                            str(tmp_path / "head-run.json"), "--threshold", "10",
                            "--out", str(out_file))
    text = out_file.read_text()
    assert code == 0 and out == "" and "agentmodel" in text and "recommended to merge" in text
    code, out, _ = _compare(capsys, "--base", str(tmp_path / "base-run.json"), "--head",
                            str(tmp_path / "head-run.json"), "--format", "markdown")
    assert code == 1 and "agentmodel" in out and "🔴" in out


@pytest.mark.parametrize("base, message", [
    ("nothing-like-this", "neither a results file, a run id nor a commit"),
    ("fedcba9", "no run of commit"),
])
def test_unknown_side_is_a_usage_error(db, capsys, base, message):
    code, _, err = _compare(capsys, "--base", base, "--head", "head-run", "--db", db)
    assert code == 2 and message in err and err.count("\n") == 1
