"""The measuring worker and the parent's session: protocol, and every way a row can fail.

Crashes and hangs are injected with the worker's test-only hook ``PERFBOT_TEST_FAULT``
(bot/runner/faults.py); everything else is real: real processes, real compiler, ONNX Runtime.
"""
import os

import pytest

from bot.runner.faults import ENV as FAULT_ENV
from bot.runner.session import RowFailure, WorkerSession
from tests.fixtures.runner import tiny_models
from tests.fixtures.runner.helpers import CODE_ROOT, compile_command, model_and_feeds


@pytest.fixture
def session(tmp_path):
    phases = []
    s = WorkerSession(CODE_ROOT, tmp_path / "worker.log", on_phase=phases.append)
    s.phases = phases
    yield s
    s.close()


@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_a_row_compiles_measures_and_passes_accuracy(tmp_path, session, target):
    model, feeds = model_and_feeds(tmp_path)
    hello = session.start(60)
    assert hello["compiler"] == str(CODE_ROOT / "compiler")  # the code root's own compiler
    compiled = session.request(compile_command("e", model, feeds, target), 60)
    assert compiled["compile_s"] > 0
    measured = session.request({"cmd": "measure", "row": "e", "warmup": 1, "repeats": 4}, 60)
    assert len(measured["samples"]) == 4 and all(s > 0 for s in measured["samples"])
    assert measured["peak_mem_bytes"] > 0
    checked = session.request({"cmd": "accuracy", "row": "e", "rtol": 1e-3, "atol": 1e-3,
                               "reference_path": str(tmp_path / "ref.npz")}, 60)
    assert checked["accuracy"]["status"] == "PASSED" and checked["problem"] is None
    assert (tmp_path / "ref.npz").exists()  # cached for the other side of an A/B pair
    assert session.phases == ["compile", "warm-up", "measure", "accuracy"]


def test_unsupported_operator_is_one_line_naming_the_op(tmp_path, session):
    model, feeds = model_and_feeds(tmp_path, tiny_models.custom_op)
    session.start(60)
    with pytest.raises(RowFailure) as failure:
        session.request(compile_command("c", model, feeds), 60)
    reason = str(failure.value)
    assert "Frobnicate" in reason and "com.example" in reason and "\n" not in reason
    # the worker survives a reported error and still answers
    assert session.request(compile_command("e", *model_and_feeds(tmp_path)), 60)["compile_s"] > 0


@pytest.mark.parametrize("action, expected", [
    ("segv", "worker crashed (SIGSEGV) during compile"),
    ("exit", "worker exited with status 3 during compile"),
    ("oom", "host out of memory during compile: injected out-of-memory fault"),
])
def test_crashes_become_one_line_reasons(tmp_path, session, monkeypatch, action, expected):
    monkeypatch.setenv(FAULT_ENV, f"e@compile={action}")
    model, feeds = model_and_feeds(tmp_path)
    session.start(60)
    with pytest.raises(RowFailure) as failure:
        session.request(compile_command("e", model, feeds), 60)
    assert str(failure.value) == expected


def test_a_hang_is_killed_at_the_time_limit(tmp_path, session, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "e@measure=hang")
    model, feeds = model_and_feeds(tmp_path)
    session.start(60)
    session.request(compile_command("e", model, feeds), 60)
    pid = session.proc.pid
    with pytest.raises(RowFailure) as failure:
        session.request({"cmd": "measure", "row": "e", "warmup": 0, "repeats": 1}, 1.5)
    assert str(failure.value) == "timed out after 1.5 s during measure (worker killed)"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, not left behind
