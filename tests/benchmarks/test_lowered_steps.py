"""lowered_steps.py without a GPU: a suite row's lowered steps on the emulated gpu target, and
the comparison that names the rows whose steps differ."""
from __future__ import annotations

import json
import sys

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import lowered_steps  # noqa: E402


def test_a_row_lists_its_steps_and_the_comparison_names_what_changed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "agent.json"
    assert lowered_steps.main(["--suite", "agentmodel", "--out", str(out)]) == 0
    steps = json.loads(out.read_text())["agentmodel"]
    assert steps and all(len(step) == 2 and step[0] and step[1] for step in steps)
    assert lowered_steps.main(["--compare", str(out), str(out)]) == 0
    assert "every row lowers to the same steps" in capsys.readouterr().out
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps({"agentmodel": steps[:-1], "extra": []}))
    assert lowered_steps.main(["--compare", str(out), str(changed)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"agentmodel: {len(steps)} -> {len(steps) - 1} steps",
                                                    "extra: - -> 0 steps"]
