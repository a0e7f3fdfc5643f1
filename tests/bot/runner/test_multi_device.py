"""``--devices`` end to end on the cpu target with two fake GPUs (``PERFBOT_TEST_DEVICES``): real
worker processes, a real store. The scheduling is what is tested; the figures come from the host."""
import json

import pytest

from bot.cli import main
from bot.results_doc import validate_results
from bot.runner.devices import TEST_ENV
from tests.fixtures.runner.manifest import write_manifest

FAST = ["--target", "cpu", "--repeats", "2", "--warmup", "1", "--quiet", "--min-sample-s", "0.01"]
FAKE = [{"index": 0, "name": "A", "uuid": "FAKE-A"}, {"index": 1, "name": "B", "uuid": "FAKE-B"}]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # worker logs go under ./.perfbot
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(TEST_ENV, "A,B")
    return tmp_path


def _run(capsys, *args) -> dict:
    code = main(["run", *args, "--format", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    return validate_results(json.loads(out))


def test_two_devices_make_one_run_of_every_row_each_sample_naming_its_device(workdir, capsys):
    manifest = write_manifest(workdir / "m", [("a", "elementwise", 2, "fp32"),
                                              ("b", "elementwise", 1, "fp32"),
                                              ("c", "elementwise", 4, "fp32")])
    db = f"sqlite:///{workdir / 'r.db'}"
    common = ["--suite", "all", "--manifest", str(manifest), "--db", db, *FAST]
    one = _run(capsys, *common)
    two = _run(capsys, *common, "--devices", "all")
    key = lambda doc: [(r["name"], r["batch"], r["mode"], r["status"]) for r in doc["rows"]]  # noqa: E731
    assert key(two) == key(one) == [("a", 2, "fp32", "ok"), ("b", 1, "fp32", "ok"),
                                    ("c", 4, "fp32", "ok")]  # suite order, every row measured
    for row in two["rows"]:
        assert len(row["samples"]) == 2 and row["rate"] > 0 and row["wall_s"] > 0
        assert len(row["devices"]) == 2 and row["devices"][0] in FAKE
        assert row["devices"][0] == row["devices"][1]  # one worker process: one device
        assert row["accuracy"]["status"] == "PASSED"
    assert all("devices" not in row for row in one["rows"])  # one device: as before


def test_ab_pairs_share_a_device_and_the_rounds_move_between_devices(workdir, monkeypatch):
    """Both sides of a round on the round's GPU, their workers told so by CUDA_VISIBLE_DEVICES;
    the rounds spread over both GPUs by the seeded plan."""
    from bot.runner import sides
    from bot.runner.devices import choose
    from bot.runner.placement import DevicePool
    from models.manifest import load_manifest
    from tests.fixtures.runner.helpers import CODE_ROOT

    manifest = write_manifest(workdir / "m", [("tiny", "elementwise", 2, "fp32")])
    row = load_manifest(manifest).get("tiny")
    seen: list[tuple[str, str]] = []
    real_round = sides._round

    def watching(row, sides_, results, settings, index, prepared, on_phase, *rest):  # noqa: PLR0913
        real_round(row, sides_, results, settings, index, prepared, on_phase, *rest)
        for side, result in zip(sides_, results):
            seen.append((side.label, result.session.hello["cuda_visible_devices"]))

    monkeypatch.setattr(sides, "_round", watching)
    settings = sides.Settings(target="cpu", repeats=1, warmup=1, rounds=4, manifest=str(manifest),
                              workdir=workdir, logdir=workdir, worker_per_round=True,
                              min_sample_s=0.01, seed=3)
    placement = DevicePool(choose("all", "cpu"), seed=3).placement(sides.row_key(row), spread=True)
    base, head = sides.measure_row(row, [sides.Side("base", CODE_ROOT), sides.Side("head", CODE_ROOT)],
                                   settings, on_phase=lambda *_: None, prepare_root=CODE_ROOT,
                                   placement=placement)[0]
    planned = [placement.device_for(i) for i in range(4)]
    assert base["devices"] == head["devices"] == [d.record() for d in planned]
    assert sorted(d.index for d in planned) == [0, 0, 1, 1]  # every GPU carries both sides alike
    by_round = [dict(seen[2 * i:2 * i + 2]) for i in range(4)]
    assert [r["base"] for r in by_round] == [r["head"] for r in by_round] == [d.visible for d in planned]


def test_verify_checks_the_model_on_each_device(workdir, capsys):
    from tests.fixtures.runner import tiny_models

    model = tiny_models.elementwise(workdir / "e.onnx")
    code = main(["verify", str(model), "--target", "cpu", "--devices", "all", "--batch", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "GPU 0 (A):" and "GPU 1 (B):" in out
    assert out.count("PASSED") == 2


def test_calibrate_measures_rows_side_by_side_over_both_devices(workdir, capsys):
    """An A/A per row (the same worker pairs as ab's), two rows at once on two GPUs: one
    calibration run, rows in suite order, every row's rounds on both GPUs."""
    manifest = write_manifest(workdir / "m", [("a", "elementwise", 2, "fp32"),
                                              ("b", "elementwise", 1, "fp32")])
    code = main(["calibrate", "--suite", "all", "--manifest", str(manifest), "--rounds", "3",
                 "--db", f"sqlite:///{workdir / 'r.db'}", "--devices", "0,1", "--format", "json",
                 *FAST])
    doc = validate_results(json.loads(capsys.readouterr().out))
    assert code == 0
    assert [r["name"] for r in doc["rows"]] == ["a", "b"]
    for row in doc["rows"]:
        assert row["status"] == "ok" and row["calibration"]["processes"] == 6
        per_round = row["devices"][::2]  # two samples a round
        assert len(per_round) == 3 and {d["index"] for d in per_round} == {0, 1}
