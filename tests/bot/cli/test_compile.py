"""``perfbot compile`` and ``perfbot verify`` end to end on small ONNX models built here."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bot.cli import main
from compiler.onnx.testing import model_of
from compiler.targets.base import Target, register_target
from compiler.targets.ref.interpreter import Interpreter
from tests.paths import FIXTURES


@pytest.fixture(scope="module")
def mlp_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "W1"),
             numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "W2")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Tanh", ["r"], ["t"], name="tanh"),
             helper.make_node("MatMul", ["t", "W2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits)
    path = tmp_path_factory.mktemp("models") / "mlp.onnx"
    onnx.save(model_of(graph, 17), path)
    return str(path)


class SkewedTarget(Target):
    """The reference, plus 0.5 on every output: a target verify must reject."""
    name = "skewed"

    def lower(self, program, root, options, context):
        inner = Interpreter(root, context)

        class Run:
            def run(self, args):
                return [v + np.float32(0.5) for v in inner.run(args)]
        return Run()


def test_compile_json_lists_roots_with_their_parameters_and_copies(mlp_path, capsys):
    assert main(["compile", mlp_path, "--batch", "3", "--targets", "cpu,ref", "--assign",
                 "Tanh=ref", "--format", "json", "--print"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["module"], r["target"]) for r in doc["roots"]] == [
        ("main", "ref"), ("cpu_root_0", "cpu"), ("ref_root_0", "ref"), ("cpu_root_1", "cpu")]
    assert doc["roots"][2]["parameters"] == ["p0"]
    assert '@param "x" -> float32[3,8]' in doc["program"]


def test_compile_gpu_structure_without_a_device(mlp_path, capsys):
    assert main(["compile", mlp_path, "--targets", "gpu,cpu", "--assign", "Tanh=cpu",
                 "--no-offload-copy", "--no-lower", "--format", "json"]) == 0
    roots = {r["module"]: r for r in json.loads(capsys.readouterr().out)["roots"]}
    assert roots["gpu_root_0"]["parameters"] == ["p0", "gpu_root_0:#output_0"]
    assert roots["main"]["copies_to_device"] >= 1 and roots["cpu_root_0"]["copies_to_device"] == 0


def test_compile_text_table(mlp_path, capsys):
    assert main(["compile", mlp_path, "--targets", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "targets cpu, offload_copy on" in out and "main" in out


@pytest.mark.parametrize("argv, message", [
    (["--assign", "Tanh"], "bad --assign 'Tanh'"),
    (["--targets", "cpu,tpu"], "unknown target 'tpu'"),
    (["--targets", "cpu,ref", "--assign", "Nope=ref"], "no op type or node named 'Nope'"),
    (["--targets", "cpu,ref", "--assign", "Tanh=gpu"], "not among the targets"),
])
def test_compile_user_errors_exit_2_with_one_line(mlp_path, capsys, argv, message):
    assert main(["compile", mlp_path, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


ENCODER = FIXTURES / "torch_exports" / "transformer_gelu_legacy17-fn.onnx"


def test_an_exporters_sequence_dimension_is_given_on_the_command_line(capsys):
    """A real export with symbolic (batch, seq) inputs: without --dim the error names the flag to
    give; with it, compile and verify work."""
    assert main(["compile", str(ENCODER), "--batch", "2"]) == 2
    err = capsys.readouterr().err
    assert "dimension 1 is symbolic (seq); give its size with --dim seq=N" in err and err.count("\n") == 1
    assert main(["compile", str(ENCODER), "--batch", "2", "--dim", "seq=7", "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["verify", str(ENCODER), "--batch", "3", "--dim", "seq=7", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "PASSED"


@pytest.mark.parametrize("dim", ["seq", "seq=0", "=4", "seq=x"])
def test_bad_dims_are_one_line_errors(mlp_path, capsys, dim):
    assert main(["compile", mlp_path, "--dim", dim]) == 2
    err = capsys.readouterr().err
    assert f"bad --dim {dim!r}: expected NAME=N" in err and err.count("\n") == 1


def test_verify_passes_on_cpu_and_fails_on_a_wrong_target(mlp_path, capsys):
    assert main(["verify", mlp_path, "--target", "cpu", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASSED: ") and "max abs error" in out and "max rel error" in out
    register_target("skewed", SkewedTarget)
    assert main(["verify", mlp_path, "--target", "skewed", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "FAILED" and doc["max_abs_err"] == pytest.approx(0.5)


def test_verify_bad_files_exit_2(tmp_path, mlp_path, capsys):
    truncated = tmp_path / "cut.onnx"
    truncated.write_bytes(open(mlp_path, "rb").read()[:60])
    for argv in (["verify", str(tmp_path / "missing.onnx")], ["verify", str(truncated)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("perfbot: error: ") and err.count("\n") == 1


def test_verify_unsupported_operator_exit_2(tmp_path, capsys):
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="weird", domain="")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "weird.onnx"
    onnx.save(model_of(graph, 17), path)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "NoSuchOp" in err and "weird" in err


@pytest.mark.parametrize("row", ["smoke-resnet", "smoke-bert", "smoke-mobilenet"])
def test_verify_manifest_rows_on_cpu(row, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path))
    assert main(["verify", row, "--target", "cpu", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "PASSED" and doc["model"] == row and doc["max_abs_err"] is not None


def test_verify_unknown_row_is_a_user_error(capsys):
    assert main(["verify", "no-such-row", "--target", "cpu"]) == 2
    assert "no-such-row" in capsys.readouterr().err


def test_verify_gpu_without_a_usable_gpu_is_one_line(mlp_path, capsys, monkeypatch):
    from compiler.targets.gpu.backend import gpu_available
    if gpu_available():
        pytest.skip("a GPU is usable here")
    monkeypatch.delenv("PERFBOT_GPU_EMULATE", raising=False)
    assert main(["verify", mlp_path, "--target", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfbot: error: ") and err.count("\n") == 1


def test_verify_index_inputs_out_of_range_are_one_line(tmp_path, capsys):
    # An embedding lookup into a 2-row table: ids from [0, 2) work, ids from [0, 5) cannot.
    table = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "table")
    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")], "emb",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 3])], [table])
    path = tmp_path / "emb.onnx"
    onnx.save(model_of(graph, 17), path)
    assert main(["verify", str(path), "--target", "cpu", "--batch", "2"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert main(["verify", str(path), "--target", "cpu", "--batch", "2", "--int-high", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--int-high" in err and "Traceback" not in err


def test_compile_takes_a_suite_row_name_as_verify_does(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path))
    assert main(["compile", "smoke-resnet", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "smoke-resnet" and doc["roots"][0]["target"] == "cpu"


def test_compile_mistyped_row_name_gets_a_hint(capsys):
    assert main(["compile", "smoke-resnt"]) == 2
    err = capsys.readouterr().err
    assert "did you mean smoke-resnet" in err and err.count("\n") == 1


def test_verify_names_the_worst_output_in_quotes(capsys):
    """An output named "output" read "worst output output at [0, 6]"."""
    from reports.compile import render_verify
    line = render_verify({"status": "PASSED", "model": "m.onnx", "target": "cpu", "rtol": 1e-3, "atol": 1e-3,
                          "max_abs_err": 1e-6, "max_rel_err": 2e-6, "worst_output": "output",
                          "worst_index": [0, 6]}, "text")
    assert line.endswith("largest error in output 'output' at [0, 6]") and "output output" not in line


def _offset_lookup(tmp_path):
    """Rows of a 2-row table at index ``rate - 16000``: only a rate of 16000 or 16001 is valid, as
    a model with a sample-rate input takes only the rates it was built for."""
    table = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "table")
    base = numpy_helper.from_array(np.array(16000, np.int64), "base")
    nodes = [helper.make_node("Sub", ["rate", "base"], ["index"]),
             helper.make_node("Gather", ["table", "index"], ["rows"], name="lookup"),
             helper.make_node("Mul", ["rows", "scale"], ["y"])]
    graph = helper.make_graph(nodes, "rate", [helper.make_tensor_value_info("rate", TensorProto.INT64, [2]),
                                              helper.make_tensor_value_info("scale", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [table, base])
    path = tmp_path / "rate.onnx"
    onnx.save(model_of(graph, 17), path)
    return str(path)


def test_verify_draws_an_input_as_given(tmp_path, capsys):
    path = _offset_lookup(tmp_path)
    assert main(["verify", path, "--target", "cpu"]) == 2  # rates from [0, 2): no such rows
    capsys.readouterr()
    assert main(["verify", path, "--target", "cpu", "--input", "rate=16000", "--input", "scale=uniform:-2:2"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert main(["verify", path, "--target", "cpu", "--input", "rate=int:16000:16002", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "PASSED"


@pytest.mark.parametrize("draw, message", [
    ("rates=16000", "the model has no input 'rates'; its inputs: rate, scale"),
    ("rate", "expected NAME=DRAW"),
    ("rate=16000.5", "expected int:LOW:HIGH"),
    ("rate=int:3:1", "needs low < high"),
    ("scale=normal:0", "expected int:LOW:HIGH, uniform:LOW:HIGH or normal:MEAN:STD"),
    ("scale=normal:0:-1", "'std' must be positive"),
    ("rate=int:0:x", "high must be an integer"),
])
def test_verify_bad_input_draws_are_one_line_errors(tmp_path, capsys, draw, message):
    assert main(["verify", _offset_lookup(tmp_path), "--target", "cpu", "--input", draw]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_verify_names_input_when_an_if_takes_a_branch_not_built(tmp_path, capsys):
    """The else branch reshapes two elements to three, so it cannot be built for x of two: the
    condition input chooses whether the run can go on, which --input sets."""
    three = numpy_helper.from_array(np.array([3], np.int64), "three")
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["a"])], "then", [],
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Reshape", ["x", "three"], ["b"])], "else", [],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)], [three])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then, else_branch=other)],
                              "branches", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "branches.onnx"
    onnx.save(model_of(graph, 17), path)
    assert main(["verify", str(path), "--target", "cpu", "--input", "c=1"]) == 0
    capsys.readouterr()
    assert main(["verify", str(path), "--target", "cpu", "--input", "c=0"]) == 2
    err = capsys.readouterr().err
    assert "node 'choose' (If): its else_branch cannot run" in err and "--input NAME=VALUE" in err
    assert err.count("\n") == 1
