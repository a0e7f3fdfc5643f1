"""A newcomer's loop, run twice on the same commit and compared: one worker process per row and
run, so compare must not judge (it says why), whatever the two processes' speeds."""
from __future__ import annotations

import json

from bot.cli import main
from tests.fixtures.runner.manifest import write_manifest


def test_run_run_compare_of_one_commit_flags_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("a", "relu", 1, "fp32"), ("b", "elementwise", 2, "fp32")])
    db = f"sqlite:///{tmp_path / 'r.db'}"
    common = ["--suite", "all", "--manifest", str(manifest), "--db", db, "--target", "cpu",
              "--quiet", "--repeats", "3", "--warmup", "1", "--min-sample-s", "0.005", "--format", "json"]
    ids = []
    for _ in range(2):
        assert main(["run", *common]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["run"]["measurement"]["rate"] == "host" and doc["run"]["measurement"]["mode"] == "run"
        assert all(r["blocks"] == [0, 0, 0] and r["sampling"]["runs_per_sample"] for r in doc["rows"])
        ids.append(doc["run"]["id"])
    assert main(["compare", "--base", ids[0], "--head", ids[1], "--db", db, "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert {r["mark"] for r in comparison["rows"]} == {"ok"}
    assert not any(r["judged"] for r in comparison["rows"])
    assert all(r["reason"].startswith("one process per side") for r in comparison["rows"])
    assert any("2 of 2 rows were not judged" in w for w in comparison["warnings"])
    assert comparison["verdict"] == "recommended"


def test_rounds_give_a_run_independent_samples(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("a", "relu", 1, "fp32")])
    assert main(["run", "--suite", "all", "--manifest", str(manifest), "--db", f"sqlite:///{tmp_path / 'r.db'}",
                 "--target", "cpu", "--quiet", "--repeats", "2", "--warmup", "1", "--min-sample-s", "0.005",
                 "--rounds", "3", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [row] = doc["rows"]
    assert row["blocks"] == [0, 0, 1, 1, 2, 2] and len(row["sampling"]["runs_per_sample"]) == 3
    # every sample records how much of the CPUs other work took meanwhile (bot.runner.cpu_state)
    assert len(row["conditions"]) == 6
    assert all(0 <= c["others_cpu_pct"] <= 100 for c in row["conditions"])
    # ...and the machine's own speed just after it (bot.runner.machine_speed)
    assert all(c["reference_rate"] > 0 for c in row["conditions"])
    # compile time and peak memory per worker process, for compare's rank test
    assert len(row["compile_samples"]) == 3 and len(row["peak_mem_samples"]) == 3
    assert row["peak_mem_bytes"] == max(row["peak_mem_samples"])
    assert doc["run"]["measurement"]["rounds"] == 3 and doc["run"]["measurement"]["worker_per_round"]


def test_a_profiled_run_stores_each_row_s_instructions(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("a", "relu", 1, "fp32")])
    assert main(["run", "--suite", "all", "--manifest", str(manifest), "--db", f"sqlite:///{tmp_path / 'r.db'}",
                 "--target", "cpu", "--quiet", "--repeats", "2", "--warmup", "1", "--min-sample-s", "0.005",
                 "--profile", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["profile"] and {"name", "op", "mean_us"} <= set(row["profile"][0])
    assert "Relu" in {entry["op"] for entry in row["profile"]}
