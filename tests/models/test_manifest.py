"""The suite manifest: the packaged suites, and clear errors for broken manifests."""
from __future__ import annotations

from pathlib import Path

import pytest

from compiler.errors import UserError
from models.manifest import InputSpec, ManifestError, load_manifest

REFERENCE_ORDER = [
    "torchvision-resnet50", "torchvision-resnet50_fp16", "torchvision-densenet121",
    "torchvision-densenet121_fp16", "torchvision-inceptionv3", "torchvision-inceptionv3_fp16",
    "cadene-inceptionv4", "cadene-resnext64x4", "slim-mobilenet", "slim-nasnetalarge", "slim-resnet50v2",
    "bert-mrpc-onnx", "bert-mrpc-tf", "pytorch-examples-wlang-gru", "pytorch-examples-wlang-lstm",
    "torchvision-resnet50_1", "torchvision-inceptionv3_1", "cadene-dpn92_1", "cadene-resnext101_1",
    "slim-vgg16_1", "slim-mobilenet_1", "slim-inceptionv4_1", "onnx-taau-downsample", "dlrm-criteoterabyte",
    "dlrm-criteoterabyte_fp16", "agentmodel", "unet_fp16",
]
REFERENCE_BATCH = {"torchvision-resnet50": 64, "torchvision-densenet121": 32, "torchvision-inceptionv3": 32,
                   "cadene-inceptionv4": 16, "cadene-resnext64x4": 16, "slim-mobilenet": 64,
                   "slim-nasnetalarge": 64, "slim-resnet50v2": 64, "bert-mrpc-onnx": 8, "unet": 2}


def test_default_suite_is_the_reference_table():
    m = load_manifest()
    rows = m.suite("default")
    assert [r.name for r in rows] == REFERENCE_ORDER
    for r in rows:
        assert r.batch == REFERENCE_BATCH.get(r.name.removesuffix("_fp16"), 1), r.name
        assert r.mode == ("fp16" if r.name.endswith("_fp16") else "fp32")
        assert r.params, r.name
    # _fp16 rows compile the fp32 file of their twin: same builder and options.
    assert m.get("torchvision-resnet50_fp16").options == m.get("torchvision-resnet50").options


def test_smoke_suite_is_small_and_varied():
    rows = load_manifest().suite("smoke")
    assert 4 <= len(rows) <= 6
    assert {"resnet", "bert", "wlang", "agent"} <= {r.builder for r in rows}


def test_tolerance_defaults_and_select():
    m = load_manifest()
    assert (m.get("torchvision-resnet50").rtol, m.get("torchvision-resnet50").atol) == (1e-3, 1e-3)
    assert (m.get("unet_fp16").rtol, m.get("unet_fp16").atol) == (4e-2, 4e-2)
    assert [r.name for r in m.select("agentmodel, smoke-bert")] == ["agentmodel", "smoke-bert"]
    assert m.select("smoke") == m.suite("smoke")
    mixed = [r.name for r in m.select("bert-mrpc-tf,smoke,agentmodel")]
    assert mixed[0] == "bert-mrpc-tf" and mixed[1:] == [r.name for r in m.suite("smoke")]
    assert m.get("bert-mrpc-onnx").inputs["input_ids"] == InputSpec("int", low=0, high=30522)
    with pytest.raises(ManifestError, match="'nope' is neither a suite nor a row of manifest"):
        m.select("agentmodel,nope")
    with pytest.raises(ManifestError, match="'nightly' is neither a suite nor a row"):
        m.suite("nightly")


def write(tmp_path: Path, body: str, name: str = "suite.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


GOOD_ROW = '[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\n'


@pytest.mark.parametrize("body, message", [
    ('[[rows]]\nname = "a"\nbuilder = "transformerxl"\nbatch = 1\n', "unknown builder 'transformerxl'; known: agent"),
    (GOOD_ROW + GOOD_ROW, "duplicate row name 'a'"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\ncolour = "red"\n', r"row 'a': unknown field\(s\) colour"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 0\n', "'batch' must be a positive integer"),
    (GOOD_ROW + 'dims = { past = -1 }\n', "'dims.past' must be a non-negative integer"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\nmode = "int8"\n', "'mode' must be one of fp32, fp16"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\nrtol = -1\n', "'rtol' must be a positive number"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\noptions = { layers = 3 }\n',
     "builder 'agent' has no option"),
    ('[[rows]]\nname = "a"\nbatch = 1\n', "exactly one of 'builder' or 'path'"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\ninputs.obs = { dist = "int", low = 5, high = 5 }\n',
     r"needs low < high"),
    ('[[rows]]\nname = "a"\nbuilder = "agent"\nbatch = 1\ninputs.obs = { dist = "poisson" }\n', "'dist' must be one of"),
    (GOOD_ROW + '[suites]\nsmoke = ["a", "b"]\n', r"suite 'smoke' names unknown row\(s\) b"),
    ("rows = [", "not valid TOML"),
])
def test_bad_manifests_give_one_clear_error(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(ManifestError, match=message) as info:
        load_manifest(path)
    assert isinstance(info.value, UserError)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_a_dimension_may_be_zero_as_an_empty_cache_is(tmp_path):
    manifest = load_manifest(write(tmp_path, GOOD_ROW + 'dims = { past_sequence_length = 0, seq = 8 }\n'))
    assert manifest.get("a").dims == {"past_sequence_length": 0, "seq": 8}


def test_missing_model_file_fails_its_row_when_built_not_the_manifest(tmp_path):
    from models.cache import build_model

    (tmp_path / "models" / "folder.onnx").mkdir(parents=True)
    path = write(tmp_path, '[[rows]]\nname = "ext"\npath = "models/absent.onnx"\nbatch = 1\n\n'
                           '[[rows]]\nname = "dir"\npath = "models/folder.onnx"\nbatch = 1\n')
    manifest = load_manifest(path)  # the other rows stay usable
    with pytest.raises(ManifestError, match=r"row 'ext': model file .*absent.onnx not found"):
        build_model(manifest.get("ext"))
    with pytest.raises(ManifestError, match=r"row 'dir': model path .*folder.onnx is a folder, not an"):
        build_model(manifest.get("dir"))


def test_paths_resolve_inside_the_manifest_folder(tmp_path):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "m.onnx").write_bytes(b"x")
    (tmp_path / "outside.onnx").write_bytes(b"x")
    inner = tmp_path / "zoo" / "suite.toml"
    inner.write_text('[[rows]]\nname = "ok"\npath = "m.onnx"\nbatch = 2\n')
    assert load_manifest(inner).get("ok").path == (tmp_path / "zoo" / "m.onnx").resolve()
    inner.write_text('[[rows]]\nname = "esc"\npath = "../outside.onnx"\nbatch = 1\n')
    with pytest.raises(ManifestError, match="escapes the manifest's folder"):
        load_manifest(inner)
    # An absolute path is an explicit choice and is allowed.
    inner.write_text(f'[[rows]]\nname = "abs"\npath = "{tmp_path / "outside.onnx"}"\nbatch = 1\n')
    assert load_manifest(inner).get("abs").path == tmp_path / "outside.onnx"


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="not found"):
        load_manifest(tmp_path / "none.toml")
