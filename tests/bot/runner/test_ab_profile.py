"""``perfbot ab`` where the head slows one kernel: the row is 🔴 and its details name that
kernel's node first (ref target, each side's own compiler from a temporary repository)."""
from __future__ import annotations

import pytest

from bot.results_doc import validate_compare
from tests.bot.runner.test_ab import _ab, _commit, _git, repo  # noqa: F401  repo: the module fixture
from reports.markdown import render_performance

SLOW_RELU = '''

from compiler.ops.registry import get_op as _get_op

_relu_type = type(_get_op("Relu"))
_fast_relu = _relu_type.compute


def _slow_relu(self, attrs, *args):  # test commit: every Relu 5 ms slower
    _time.sleep(0.005)
    return _fast_relu(self, attrs, *args)


_relu_type.compute = _slow_relu
'''


@pytest.fixture(scope="module")
def slowed_kernel(repo):
    path, shas = repo
    _git(path, "checkout", "-q", "-b", "slow-relu", shas["base"])
    with open(path / "compiler" / "__init__.py", "a") as fh:
        fh.write("\nimport time as _time\n" + SLOW_RELU)
    sha = _commit(path, "slower Relu")
    _git(path, "checkout", "-q", "main")
    return path, shas["base"], sha



def test_a_slowed_kernel_is_the_top_mover_of_its_row(slowed_kernel, tmp_path, capsys, monkeypatch):
    path, base, head = slowed_kernel
    monkeypatch.chdir(path)
    code, comparison = _ab(path, tmp_path, capsys, "--base", base, "--head", head,
                           "--rounds", "5", "--max-rounds", "6", "--target", "ref")
    assert code == 0
    validate_compare(comparison)
    [row] = comparison["rows"]
    assert row["mark"] == "regression"
    diff = row["profile_diff"]
    assert (diff["movers"][0]["name"], diff["movers"][0]["op"]) == ("relu", "Relu")
    assert diff["movers"][0]["delta_us"] > 4000          # the 5 ms sleep, per run
    assert diff["launches_old"] == diff["launches_new"] and not diff["appeared"]
    assert row["repro"] == f"perfbot ab --base {base} --head {head} --suite tiny --target ref"
    text = render_performance(comparison)
    assert "|relu|Relu|" in text and "<details>" in text
