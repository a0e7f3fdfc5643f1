"""The export-here, run-there split of the transformers zoo (benchmarks/zoo_store.py): a tiny
ONNX model stored with its feeds and outputs, run back from the directory on the ref target, and
manifests whose names would leave the directory refused. No torch needed."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, save

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import zoo_store  # noqa: E402
from export_check import within  # noqa: E402


def _tiny(path):
    """y = softmax(x @ w), w an initializer."""
    w = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Softmax", ["h"], ["y"], axis=-1)],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor("w", TensorProto.FLOAT, [4, 5], w.ravel())])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w


def _store(tmp_path):
    w = _tiny(str(tmp_path / "tiny_legacy17.onnx"))
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    h = x @ w
    y = np.exp(h - h.max(-1, keepdims=True))
    y /= y.sum(-1, keepdims=True)
    zoo_store.save_case(str(tmp_path), "tiny", "legacy17", str(tmp_path / "tiny_legacy17.onnx"), {"x": x}, [y])
    return x, y


def test_saved_case_loads_back(tmp_path):
    x, y = _store(tmp_path)
    [(name, exporter, path, feeds, want)] = zoo_store.load_cases(str(tmp_path))
    assert (name, exporter, os.path.basename(path)) == ("tiny", "legacy17", "tiny_legacy17.onnx")
    np.testing.assert_array_equal(feeds["x"], x)
    np.testing.assert_array_equal(want[0], y)


def test_saving_again_replaces_the_case(tmp_path):
    _store(tmp_path)
    _store(tmp_path)
    assert len(json.loads((tmp_path / "manifest.json").read_text())) == 1


def test_stored_cases_run_on_a_target_in_both_modes(tmp_path):
    _store(tmp_path)
    rows = zoo_store.run_stored(str(tmp_path), ["ref"], ["fp32", "fp16"], log=lambda *a: None)
    assert [(n, e, r["status"]) for n, e, r in rows] == [("tiny", "legacy17 fp32", "PASS"),
                                                         ("tiny", "legacy17 fp16", "PASS")]


def test_only_the_named_cases_load(tmp_path):
    _store(tmp_path)
    assert zoo_store.load_cases(str(tmp_path), names={"other"}) == []


def test_a_directory_without_manifest_is_refused(tmp_path):
    with pytest.raises(zoo_store.StoreError, match="manifest"):
        zoo_store.load_cases(str(tmp_path))


@pytest.mark.parametrize("name", ["../outside.onnx", "/etc/passwd", "a/../../x.onnx", "", ".", None, 3])
def test_names_leaving_the_directory_are_refused(tmp_path, name):
    _store(tmp_path)
    manifest = tmp_path / "manifest.json"
    cases = json.loads(manifest.read_text())
    cases[0]["onnx"] = name
    manifest.write_text(json.dumps(cases))
    with pytest.raises(zoo_store.StoreError):
        zoo_store.load_cases(str(tmp_path))


def test_a_link_pointing_out_is_refused(tmp_path):
    inner = tmp_path / "zoo"
    inner.mkdir()
    (tmp_path / "secret.npz").write_bytes(b"")
    (inner / "data.npz").symlink_to(tmp_path / "secret.npz")
    with pytest.raises(zoo_store.StoreError, match="leaves"):
        zoo_store.inside(str(inner), "data.npz")
    assert zoo_store.inside(str(inner), "a.onnx") == os.path.join(os.path.realpath(inner), "a.onnx")


def test_fp16_tolerance_is_the_suites():
    want = [np.array([1.0, 100.0])]
    assert within([np.array([1.03, 103.0])], want, "fp16")
    assert not within([np.array([1.1, 100.0])], want, "fp16")
    assert not within([np.array([1.03, 100.0])], want, "fp32")
    assert not within([np.array([1.0])], want, "fp16")


def test_the_zoo_runs_a_stored_directory_without_torch(tmp_path, capsys, monkeypatch):
    import transformers_zoo
    _store(tmp_path)
    monkeypatch.chdir(tmp_path)  # --from writes nothing, not even the default --out folder
    assert transformers_zoo.main(["--from", str(tmp_path), "--targets", "ref", "--modes", "fp32,fp16"]) == 0
    assert "tiny           legacy17 fp16" in capsys.readouterr().out
    assert not (tmp_path / "benchmarks").exists()


def test_a_zoo_runs_the_gpu_target_emulated_without_a_gpu(tmp_path, monkeypatch):
    # PERFBOT_GPU_EMULATE=1: the gpu target's passes and lowering, NumPy standing in for CuPy
    from export_check import against_targets
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    path = str(tmp_path / "tiny.onnx")
    w = _tiny(path)
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    h = x @ w
    want = [np.exp(h - h.max(-1, keepdims=True)) / np.exp(h - h.max(-1, keepdims=True)).sum(-1, keepdims=True)]
    row = against_targets(path, {"x": x}, want, ["ref", "gpu"])
    assert row["status"] == "PASS" and row["error"] == "" and row["gpu"] < 1e-5
