"""peers.py's row names (benchmarks/peers.py): fixed rows, torchvision `tv:` rows and the
transformer `tx:` rows, parsed without torch (the builders import it only when called)."""
from __future__ import annotations

import sys

import pytest

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import peers  # noqa: E402


@pytest.mark.parametrize("name, batch, dtype", [("tx:bert:8:fp16", 8, "fp16"), ("tx:gpt2:8:fp32", 8, "fp32"),
                                                ("tx:llama:4:fp16", 4, "fp16"), ("tx:whisper:4:fp32", 4, "fp32"),
                                                ("tv:vit_b_16:32:fp16", 32, "fp16")])
def test_row_names_parse(name, batch, dtype):
    builder, got_batch, got_dtype = peers.row_spec(name)
    assert callable(builder) and (got_batch, got_dtype) == (batch, dtype)


def test_fixed_rows_are_looked_up():
    assert peers.row_spec("torchvision-resnet50")[1:] == (64, "fp32")


@pytest.mark.parametrize("name", ["tx:bart:8:fp16", "tx:bert:8:bf16", "tx:bert:x:fp16", "tx:bert:0:fp16",
                                  "tx:bert:8", "tq:bert:8:fp16", "tx:bert:8:fp16:extra", "nonsense"])
def test_bad_row_names_are_refused(name):
    with pytest.raises(ValueError, match="unknown row"):
        peers.row_spec(name)


def test_every_transformer_has_a_sequence_length():
    assert peers.TRANSFORMERS == {"bert": 128, "gpt2": 256, "llama": 256, "whisper": 3000}


def _graph_with(ops, path):
    from onnx import TensorProto, helper, save
    nodes = [helper.make_node(op, ["x"], [f"y{i}"]) for i, op in enumerate(ops)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None) for i in range(len(ops))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], outs)
    save(helper.make_model(graph), path)


def test_attention_must_be_decomposed(tmp_path):
    path = str(tmp_path / "a.onnx")
    _graph_with(["MatMul", "Softmax"], path)
    assert {"MatMul", "Softmax"} <= peers.decomposed_attention(path)
    _graph_with(["MatMul", "Attention"], path)
    with pytest.raises(ValueError, match="not MatMul/Softmax"):
        peers.decomposed_attention(path)


def test_prewarm_reports_each_row_that_failed(tmp_path):
    # two processes, one bad row each: every failure comes back by name, none is lost
    rows = ["nonsense", "tv:resnet18:0:fp32"]
    failed = peers.prewarm(rows, 2, str(tmp_path / "onnx"), False, False)
    assert len(failed) == 2 and all(any(line.startswith(f"{row}: ") for line in failed) for row in rows)
    assert (tmp_path / "onnx").is_dir()


def test_export_path_is_kept_in_the_export_folder(tmp_path):
    assert peers.export_path("tv:resnet18:1:fp16", str(tmp_path)) == str(tmp_path / "tv_resnet18_1_fp16.onnx")


def test_prewarm_reports_a_warm_up_process_that_died(tmp_path, monkeypatch):
    class Died:
        returncode = -9     # killed, say for memory: no line of its own came out

        def __init__(self, *args, **kwargs):
            pass

        def communicate(self):
            return "", None
    monkeypatch.setattr("subprocess.Popen", Died)
    failed = peers.prewarm(["tv:a:1:fp32", "tv:b:1:fp32", "tv:c:1:fp32"], 2, str(tmp_path), False, False)
    assert failed == ["tv:a:1:fp32,tv:c:1:fp32: warm-up process exited with -9",
                      "tv:b:1:fp32: warm-up process exited with -9"]
