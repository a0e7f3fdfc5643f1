"""``--devices``: which GPUs it names, and the one-line errors of a wrong one. The GPUs are fake
(``PERFBOT_TEST_DEVICES``, see bot/runner/devices.py): this machine may have none."""
import re

import pytest

from bot.cli import main
from bot.runner import devices
from bot.store import open_store
from common.errors import UserError


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setenv(devices.TEST_ENV, "A,B")


def test_all_names_every_gpu_each_with_its_own_measuring_cpu(two_gpus):
    found = devices.choose("all", "gpu")
    assert [(d.index, d.visible, d.name, d.uuid) for d in found] == [
        (0, "0", "A", "FAKE-A"), (1, "1", "B", "FAKE-B")]
    assert found[0].env() == {"CUDA_VISIBLE_DEVICES": "0"}
    assert found[1].record() == {"index": 1, "name": "B", "uuid": "FAKE-B"}
    cpus = [d.cpu for d in found]
    if len(set(cpus)) > 1:  # a machine of one CPU shares it
        assert cpus[0] != cpus[1]


def test_a_list_names_the_gpus_in_its_order(two_gpus):
    assert [d.index for d in devices.choose("1,0", "gpu")] == [1, 0]
    assert [d.index for d in devices.choose(" 1 ", "gpu")] == [1]


def test_without_the_option_nothing_changes(two_gpus):
    assert devices.choose(None, "gpu") is None


@pytest.mark.parametrize("spec, message", [
    ("2", "there is no GPU 2; this host has 2 (0 to 1)"),
    ("0,0", "names GPU 0 twice"),
    ("one", "must be 'all' or GPU indices separated by commas"),
    ("0,-1", "must be 'all' or GPU indices separated by commas"),
])
def test_a_wrong_index_is_one_line(two_gpus, spec, message):
    with pytest.raises(UserError, match=re.escape(message)):
        devices.choose(spec, "gpu")


def test_no_gpu_at_all_is_said_so(monkeypatch):
    monkeypatch.setenv(devices.TEST_ENV, "")
    with pytest.raises(UserError, match="this host has no GPU that CUDA can see"):
        devices.choose("all", "gpu")


def test_devices_do_not_apply_to_host_targets(monkeypatch):
    monkeypatch.delenv(devices.TEST_ENV, raising=False)
    with pytest.raises(UserError, match="applies to the gpu target only"):
        devices.choose("0", "cpu")


def test_cuda_visible_devices_renumbers_the_gpus(monkeypatch):
    """Indices are CUDA's as this process sees them; a worker is given the physical GPU."""
    monkeypatch.delenv(devices.TEST_ENV, raising=False)
    monkeypatch.setattr(devices, "_nvml_devices", lambda: [("H200", f"GPU-{i}") for i in range(8)])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    found = devices.choose("1", "gpu")
    assert [(d.index, d.visible, d.uuid) for d in found] == [(1, "GPU-6", "GPU-6")]


@pytest.mark.parametrize("command", [["run"], ["ab", "--base", "HEAD"], ["calibrate"],
                                     ["verify", "model.onnx"]])
def test_every_measuring_command_refuses_a_bad_devices_in_one_line(two_gpus, tmp_path, monkeypatch,
                                                                   capsys, command):
    monkeypatch.chdir(tmp_path)
    code = main([*command, "--target", "cpu", "--devices", "5", *(
        ["--db", f"sqlite:///{tmp_path / 'r.db'}"] if command[0] != "verify" else [])])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "perfbot: error: --devices '5': there is no GPU 5; this host has 2 (0 to 1)"]
    if command[0] != "verify":  # refused before anything is recorded
        with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
            assert store.find_runs() == []


def test_workers_are_given_the_gpus_uuid_so_cudas_own_order_does_not_matter(monkeypatch):
    monkeypatch.delenv(devices.TEST_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(devices, "_nvml_devices", lambda: [("H200", "GPU-a"), ("H200", None)])
    found = devices.choose("all", "gpu")
    assert [d.env() for d in found] == [{"CUDA_VISIBLE_DEVICES": "GPU-a"}, {"CUDA_VISIBLE_DEVICES": "1"}]


def test_a_worker_reads_the_state_of_the_gpu_its_uuid_names(monkeypatch):
    from bot.runner import gpu_state

    class FakeNvml:
        def nvmlDeviceGetHandleByUUID(self, uuid):
            return ("uuid", uuid)

        def nvmlDeviceGetHandleByIndex(self, index):
            return ("index", index)

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-a")
    assert gpu_state._handle(FakeNvml(), None) == ("uuid", "GPU-a")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert gpu_state._handle(FakeNvml(), None) == ("index", 3)
