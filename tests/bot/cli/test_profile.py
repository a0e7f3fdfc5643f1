"""``perfbot profile``: every instruction of a model file timed, in each format; names escaped;
bad counts one line."""
from __future__ import annotations

import json

from bot.cli import main
from reports.profile import render_profile
from tests.fixtures.runner import tiny_models


def test_profile_lists_each_instruction_slowest_first(tmp_path, capsys):
    model = tiny_models.elementwise(tmp_path / "e.onnx")
    assert main(["profile", str(model), "--target", "ref", "--batch", "2", "--runs", "2",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"] == "ref" and doc["batch"] == 2 and doc["runs"] == 2
    assert doc["run_us"] > 0        # a whole run, uninstrumented: what the entries should add up to
    assert {e["name"] for e in doc["entries"]} == {"relu", "mul", "add"}
    times = [e["mean_us"] for e in doc["entries"]]
    assert times == sorted(times, reverse=True) and min(times) > 0
    assert main(["profile", str(model), "--target", "cpu", "--batch", "2", "--top", "1"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"{model} on cpu (batch 2): ") and len(text) == 3
    assert "instructions (a whole run uninstrumented: " in text[0]


def test_fp16_compiles_in_half_precision(tmp_path, capsys, monkeypatch):
    from compiler.ir.program import Program
    compiled_with = []
    real_compile = Program.compile

    def spy(self, *args, **kwargs):
        compiled_with.append(kwargs.get("fp16"))
        return real_compile(self, *args, **kwargs)
    monkeypatch.setattr(Program, "compile", spy)
    model = tiny_models.elementwise(tmp_path / "e.onnx")
    assert main(["profile", str(model), "--target", "ref", "--batch", "2", "--fp16", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fp16"] is True
    assert main(["profile", str(model), "--target", "ref", "--batch", "2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fp16"] is False
    assert compiled_with == [True, False]
    assert main(["profile", str(model), "--target", "ref", "--batch", "2", "--fp16"]) == 0
    assert capsys.readouterr().out.startswith(f"{model} on ref (batch 2, fp16): ")


def test_bad_counts_are_one_line(tmp_path, capsys):
    model = tiny_models.elementwise(tmp_path / "e.onnx")
    assert main(["profile", str(model), "--runs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "perfbot: error: --runs must be at least 1, got 0"


def test_instruction_names_from_the_model_are_escaped():
    doc = {"model": "m", "target": "cpu", "batch": 1, "runs": 1, "entries": [
        {"root": "main", "name": "a|<b>@x\x1b[2J", "op": "Relu", "calls": 1, "mean_us": 3.0}]}
    markdown = render_profile(doc, "markdown")
    assert "a\\|&lt;b&gt;@&#8203;x" in markdown and "\x1b" not in markdown
    assert "\x1b" not in render_profile(doc, "text")
