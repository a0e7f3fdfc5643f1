"""Builders and the cache: determinism, external data, parameter counts of the whole suite."""
from __future__ import annotations

import hashlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from models.builders import BUILDERS
from models.cache import build_graph, build_model, cache_key
from models.inputs import make_feeds
from models.manifest import ManifestError, load_manifest
from models.stats import count_flops, count_parameters

MANIFEST = load_manifest()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["smoke-resnet", "smoke-bert", "smoke-wlang-lstm", "agentmodel"])
def test_same_seed_gives_byte_identical_files(tmp_path, name):
    row = MANIFEST.get(name)
    first, second = build_model(row, tmp_path / "a"), build_model(row, tmp_path / "b")
    assert first != second and digest(first) == digest(second)


def test_seed_and_options_change_the_file_and_the_key(tmp_path):
    row = MANIFEST.get("smoke-resnet")
    other = type(row)(**{**row.__dict__, "seed": 1})
    assert cache_key(other) != cache_key(row)
    assert digest(build_model(other, tmp_path)) != digest(build_model(row, tmp_path))
    wider = type(row)(**{**row.__dict__, "options": {**row.options, "base_width": 8}})
    assert cache_key(wider) != cache_key(row)


def test_cache_reuses_the_built_file_and_leaves_no_temporaries(tmp_path):
    row = MANIFEST.get("agentmodel")
    path = build_model(row, tmp_path)
    stamp = path.stat().st_mtime_ns
    assert build_model(row, tmp_path) == path and path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [path.parent.name]
    # fp32 and fp16 rows of one network share one file.
    assert cache_key(MANIFEST.get("torchvision-resnet50")) == cache_key(MANIFEST.get("torchvision-resnet50_fp16"))


def test_env_var_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path))
    path = build_model(MANIFEST.get("agentmodel"))
    assert path.is_relative_to(tmp_path / "models")


def test_external_data_round_trip(tmp_path):
    row = MANIFEST.get("smoke-bert")
    graph = build_graph(row)
    inline = graph.save(tmp_path / "inline.onnx", seed=0, external=False)
    external = graph.save(tmp_path / "ext.onnx", seed=0, external=True)
    assert (tmp_path / "ext.onnx.data").stat().st_size == graph.weight_bytes()
    assert external.stat().st_size < inline.stat().st_size / 10
    onnx.checker.check_model(str(external), full_check=True)
    a, b = onnx.load(str(inline)), onnx.load(str(external))
    assert [t.name for t in a.graph.initializer] == [t.name for t in b.graph.initializer]
    for ta, tb in zip(a.graph.initializer, b.graph.initializer):
        np.testing.assert_array_equal(onnx.numpy_helper.to_array(ta), onnx.numpy_helper.to_array(tb))
    feeds = make_feeds(row, inline)
    run = lambda p: ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, feeds)  # noqa: E731
    for x, y in zip(run(inline), run(external)):
        np.testing.assert_array_equal(x, y)


def test_large_graphs_choose_external_data(tmp_path, monkeypatch):
    import models.graph as graph_module
    monkeypatch.setattr(graph_module, "EXTERNAL_THRESHOLD_BYTES", 1 << 20)
    path = build_model(MANIFEST.get("agentmodel"), tmp_path)  # 2.4 MB of weights
    assert path.with_name("model.onnx.data").is_file()
    model = onnx.load(str(path), load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    assert count_parameters(model) == MANIFEST.get("agentmodel").params


@pytest.mark.parametrize("row", MANIFEST.suite("default"), ids=lambda r: r.name)
def test_parameter_counts_match_published_within_one_percent(row):
    graph = build_graph(row)  # shapes only: fast even for the 860 M parameter UNet
    assert abs(graph.param_count() - row.params) <= 0.01 * row.params


def test_architecture_details_from_shapes():
    # Published figures: ResNet-50 ~4.1 GMACs, VGG-16 ~15.5 GMACs, DLRM top MLP input 479.
    assert 8.0e9 < count_flops(build_graph(MANIFEST.get("torchvision-resnet50")).shape_only_model()) < 8.4e9
    assert 30.5e9 < count_flops(build_graph(MANIFEST.get("slim-vgg16_1")).shape_only_model()) < 31.5e9
    dlrm = build_graph(MANIFEST.get("dlrm-criteoterabyte"))
    assert dlrm.weights["top_l.0.weight"].shape == (1024, 479)
    assert sum(1 for n in dlrm.weights if n.startswith("emb_l.")) == 26
    assert max(dlrm.weights[f"emb_l.{i}.weight"].shape[0] for i in range(26)) == 100_000
    assert dlrm.weights["emb_l.5.weight"].shape[0] == 3  # small tables are not padded up to the cap


def test_smoke_rows_are_small():
    for row in MANIFEST.suite("smoke"):
        flops = count_flops(build_graph(row).shape_only_model()) * row.batch
        assert flops < 50e6, (row.name, flops)


def test_every_builder_is_reachable_from_the_manifest():
    assert {r.builder for r in MANIFEST.rows} == set(BUILDERS)


def test_external_rows_are_returned_as_is(tmp_path):
    row = MANIFEST.get("agentmodel")
    built = build_model(row, tmp_path)
    ext = type(row)(**{**row.__dict__, "builder": None, "path": built})
    assert build_model(ext, tmp_path / "other") == built
    with pytest.raises(ManifestError):
        build_graph(ext)


@pytest.mark.parametrize("name", ["dlrm-criteoterabyte", "dlrm-criteoterabyte_fp16", "smoke-dlrm"])
def test_dlrm_index_ranges_match_the_capped_tables(name):
    row = MANIFEST.get(name)
    graph = build_graph(row)
    for t in range(26):
        spec = row.inputs[f"sparse_{t}"]
        assert (spec.dist, spec.low, spec.high) == ("int", 0, graph.weights[f"emb_l.{t}.weight"].shape[0])


def test_einsum_flops_expand_ellipses_and_minimum_bytes_count_gathered_rows():
    """FLOPs of an attention Einsum written with ``...`` (TF exports), and the least bytes an
    inference moves: weights once (an embedding table only through the rows it gathers; fp32
    weights at half size in fp16 mode), inputs and outputs at the batch."""
    from onnx import TensorProto, helper, numpy_helper

    from models.stats import minimum_bytes
    f = TensorProto.FLOAT
    attention = helper.make_model(helper.make_graph(
        [helper.make_node("Einsum", ["q", "k"], ["s"], equation="...qd,...kd->...qk")], "a",
        [helper.make_tensor_value_info("q", f, ["batch", 12, 16, 64]), helper.make_tensor_value_info("k", f, [12, 16, 64])],
        [helper.make_tensor_value_info("s", f, None)]))
    assert count_flops(attention) == 2 * 12 * 16 * 16 * 64
    table, w = np.zeros((1000, 8), np.float32), np.zeros((8, 4), np.float32)
    lookup = helper.make_model(helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3])],
        [helper.make_tensor_value_info("y", f, ["batch", 3, 4])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(w, "w")]))
    gathered, weights, ids, out = 2 * 3 * 8 * 4, 8 * 4 * 4, 2 * 3 * 8, 2 * 3 * 4 * 4
    assert minimum_bytes(lookup, batch=2) == gathered + weights + ids + out
    assert minimum_bytes(lookup, batch=2, fp16=True) == (gathered + weights) // 2 + ids + out
    dlrm = build_graph(MANIFEST.get("dlrm-criteoterabyte"))     # shape-only: weights as inputs
    tables = 4 * sum(w.size for n, w in dlrm.weights.items() if n.startswith("emb_l."))
    assert minimum_bytes(dlrm.shape_only_model(), 1, weights=dlrm.weights) < dlrm.weight_bytes() - tables / 2
