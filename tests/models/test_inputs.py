"""Seeded input generation: shapes, dtypes, value ranges and determinism."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.onnx.testing import model_of
from models.cache import build_model
from models.inputs import make_feeds
from models.manifest import InputSpec, ManifestError, load_manifest
from tests.paths import FIXTURES

MANIFEST = load_manifest()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def test_integer_inputs_stay_in_their_ranges(cache):
    row = MANIFEST.get("smoke-dlrm")
    feeds = make_feeds(row, build_model(row, cache), batch=4096)
    for t in range(26):
        ids = feeds[f"sparse_{t}"]
        spec = row.inputs[f"sparse_{t}"]
        assert ids.dtype == np.int64 and ids.shape == (4096,)
        assert ids.min() >= spec.low and ids.max() < spec.high
        if spec.high <= 256:  # small tables: every index is drawn, the upper bound is exclusive
            assert ids.max() == spec.high - 1
    dense = feeds["dense_x"]
    assert dense.dtype == np.float32 and dense.shape == (4096, 13)
    assert 0.0 <= dense.min() and dense.max() < 4.0


def test_token_ids_below_vocab_and_batch_binding(cache):
    row = MANIFEST.get("smoke-bert")
    path = build_model(row, cache)
    feeds = make_feeds(row, path)
    assert feeds["input_ids"].shape == (row.batch, 32)
    assert make_feeds(row, path, batch=5)["input_ids"].shape == (5, 32)
    big = make_feeds(row, path, batch=512)
    assert big["input_ids"].max() < 1000 and big["input_ids"].min() >= 0
    assert set(np.unique(big["attention_mask"])) == {0, 1}


def test_float_defaults_and_seeds(cache):
    row = MANIFEST.get("smoke-wlang-lstm")
    path = build_model(row, cache)
    a, b, c = make_feeds(row, path, seed=0), make_feeds(row, path, seed=0), make_feeds(row, path, seed=1)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["h0"], c["h0"])
    assert a["input"].shape == (1, 35) and a["h0"].shape == (2, 1, 64) and a["h0"].dtype == np.float32
    assert 0.3 < a["h0"].std() < 0.7  # the manifest asks for std 0.5
    image_row = MANIFEST.get("smoke-resnet")
    x = make_feeds(image_row, build_model(image_row, cache), batch=8)["input"]
    assert x.shape == (8, 3, 64, 64) and abs(float(x.mean())) < 0.05 and 0.95 < x.std() < 1.05


def test_integer_input_without_a_range_is_a_clear_error(cache):
    row = MANIFEST.get("smoke-bert")
    bare = type(row)(**{**row.__dict__, "inputs": {"attention_mask": InputSpec("int", 0, 2)}})
    with pytest.raises(ManifestError, match="integer input 'input_ids' needs a range"):
        make_feeds(bare, build_model(row, cache))


def _exported_model(tmp_path):
    """An exporter's naming: batch as "N" on the first axis, a second symbolic "seq" axis."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "exported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "seq", 4])])
    path = tmp_path / "exported.onnx"
    onnx.save(model_of(graph, 17), path)
    return path


def _path_manifest(tmp_path, extra: str):
    from models.manifest import load_manifest as load
    text = f'[suites]\nx = ["exported"]\n\n[[rows]]\nname = "exported"\npath = "exported.onnx"\nbatch = 3\n{extra}'
    (tmp_path / "suite.toml").write_text(text)
    return load(tmp_path / "suite.toml")


def test_symbolic_dims_from_the_row_and_the_first_axis_as_batch(tmp_path):
    path = _exported_model(tmp_path)
    row = _path_manifest(tmp_path, "dims = { seq = 5 }\n").get("exported")
    assert make_feeds(row, path)["x"].shape == (3, 5, 4)
    bare = _path_manifest(tmp_path, "").get("exported")
    with pytest.raises(ManifestError, match=r"symbolic dimension \"seq\"; give its size .*dims = \{ \"seq\" = N \}"):
        make_feeds(bare, path)


def test_paddle_unknown_axes_are_given_by_input_and_axis_and_reach_the_compiler(tmp_path):
    """Paddle's exports write ``?`` or -1 for every unknown axis: the manifest names each by input
    and axis, and the worker binds the compiler's parse the same way from the feeds."""
    import onnx
    from onnx import TensorProto, helper

    import compiler
    from bot.runner.worker import symbolic_dims
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "paddle",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", 3, "?", -1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(model_of(graph, 17), tmp_path / "exported.onnx")
    bare = _path_manifest(tmp_path, 'dims = { "?" = 5 }\n').get("exported")
    with pytest.raises(ManifestError, match=r'symbolic dimension "x:2"; .*dims = \{ "x:2" = N \}'):
        make_feeds(bare, tmp_path / "exported.onnx")
    row = _path_manifest(tmp_path, 'dims = { "x:2" = 4, "x:3" = 6 }\n').get("exported")
    feeds = make_feeds(row, tmp_path / "exported.onnx")
    assert feeds["x"].shape == (3, 3, 4, 6)
    dims = symbolic_dims(str(tmp_path / "exported.onnx"), feeds)
    program = compiler.parse_onnx(str(tmp_path / "exported.onnx"), batch_size=3, dims=dims)
    assert program.main.parameters()[0].shape.lens == (3, 3, 4, 6)


def test_a_boolean_mask_input_asks_for_bits_and_gets_them(tmp_path):
    """A real export (nn.TransformerEncoder, with a boolean key-padding mask) named in a manifest:
    without an entry the mask is a clear error, with one it is drawn as bits."""
    import shutil

    from models.manifest import load_manifest
    export = FIXTURES / "torch_exports" / "transformer_gelu_legacy17-fn.onnx"
    shutil.copy(export, tmp_path / "encoder.onnx")
    text = ('[suites]\nx = ["encoder"]\n\n[[rows]]\nname = "encoder"\npath = "encoder.onnx"\n'
            'batch = 4\ndims = { seq = 7 }\n')
    (tmp_path / "suite.toml").write_text(text)
    bare = load_manifest(tmp_path / "suite.toml").get("encoder")
    with pytest.raises(ManifestError, match=r"boolean input 'in1' needs a range .*high = 2 \} for random bits"):
        make_feeds(bare, tmp_path / "encoder.onnx")
    (tmp_path / "suite.toml").write_text(text + 'inputs.in1 = { dist = "int", low = 0, high = 2 }\n')
    row = load_manifest(tmp_path / "suite.toml").get("encoder")
    feeds = make_feeds(row, tmp_path / "encoder.onnx")
    assert feeds["in0"].shape == (4, 7, 32) and feeds["in1"].dtype == np.bool_
    assert feeds["in1"].shape == (4, 7) and 0 < feeds["in1"].sum() < feeds["in1"].size


@pytest.mark.parametrize("dims", ["dims = 5", "dims = { seq = -1 }", 'dims = { seq = "long" }'])
def test_bad_dims_are_manifest_errors(tmp_path, dims):
    _exported_model(tmp_path)
    with pytest.raises(ManifestError, match="dims"):
        _path_manifest(tmp_path, dims + "\n")


def test_models_list_of_a_manifest_without_a_default_suite_lists_its_rows(tmp_path, capsys):
    import json

    from bot.cli import main
    _exported_model(tmp_path)
    _path_manifest(tmp_path, "dims = { seq = 5 }\n")
    assert main(["models", "list", "--manifest", str(tmp_path / "suite.toml"), "--format", "json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["exported"]
