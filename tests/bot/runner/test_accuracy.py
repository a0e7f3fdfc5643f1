"""Accuracy check of the runner: every output, isclose rule, worst element, NaN/Inf."""
import json

import numpy as np
import pytest

from bot.runner.accuracy import compare_outputs
from bot.runner.protocol import encode


def _ref():
    rng = np.random.default_rng(0)
    return {"probs": rng.random((2, 4)).astype(np.float32),
            "hidden": rng.standard_normal((2, 3, 5)).astype(np.float32)}


def test_identical_outputs_pass_with_zero_error():
    ref = _ref()
    result = compare_outputs([v.copy() for v in ref.values()], ref, 1e-3, 1e-3)
    assert result.status == "PASSED"
    assert result.max_abs_err == 0.0 and result.max_rel_err == 0.0
    assert result.problem is None and not result.nonfinite


def test_every_output_is_checked_and_the_worst_element_is_named():
    ref = _ref()
    ours = [v.copy() for v in ref.values()]
    ours[0][0, 0] += 5e-4          # inside atol + rtol*|b| (1e-3 + ...)
    ours[1][1, 2, 3] += 0.5        # far outside: the second output fails
    result = compare_outputs(ours, ref, 1e-3, 1e-3)
    assert result.status == "FAILED"
    assert result.worst_output == "hidden"
    assert result.worst_index == [1, 2, 3]
    assert result.max_abs_err == pytest.approx(0.5, rel=1e-5)
    expected_rel = 0.5 / abs(float(ref["hidden"][1, 2, 3]))
    assert result.max_rel_err == pytest.approx(expected_rel, rel=1e-4)


def test_relative_tolerance_scales_with_the_reference():
    ref = {"y": np.array([1000.0, 0.0], dtype=np.float32)}
    ours = [np.array([1000.9, 0.0009], dtype=np.float32)]  # 0.9 <= 1e-3 + 1e-3*1000
    assert compare_outputs(ours, ref, 1e-3, 1e-3).status == "PASSED"
    ours = [np.array([1002.5, 0.0], dtype=np.float32)]
    assert compare_outputs(ours, ref, 1e-3, 1e-3).status == "FAILED"


def test_nan_in_our_output_fails_and_is_reported_with_its_index():
    ref = _ref()
    ours = [v.copy() for v in ref.values()]
    ours[0][1, 2] = np.nan
    result = compare_outputs(ours, ref, 1e-3, 1e-3)
    assert result.status == "FAILED" and result.nonfinite
    assert result.problem == "output 'probs' has NaN at index [1, 2]"
    assert result.worst_output == "probs" and result.worst_index == [1, 2]
    # the document holds no Inf/NaN: the error is capped and JSON-encodable
    assert np.isfinite(result.max_abs_err)
    json.loads(encode({"accuracy": result.as_row()}))


def test_nan_on_both_sides_adds_no_error_but_still_fails():
    ref = {"y": np.array([np.nan, 1.0], dtype=np.float32)}
    result = compare_outputs([np.array([np.nan, 1.0], dtype=np.float32)], ref, 1e-3, 1e-3)
    assert result.status == "FAILED" and result.nonfinite
    assert result.max_abs_err == 0.0
    assert result.problem == "output 'y' has NaN at index [0] (so does ONNX Runtime's)"


def test_shape_or_count_mismatch_is_a_problem():
    ref = _ref()
    result = compare_outputs([ref["probs"], ref["hidden"][:1]], ref, 1e-3, 1e-3)
    assert result.status == "FAILED"
    assert "output 'hidden' has shape [1, 3, 5], ONNX Runtime gives [2, 3, 5]" == result.problem
    result = compare_outputs([ref["probs"]], ref, 1e-3, 1e-3)
    assert result.status == "FAILED" and "1 outputs, ONNX Runtime 2" in result.problem


def test_fp16_outputs_are_compared_in_float64():
    ref = {"y": np.linspace(-3, 3, 50, dtype=np.float32)}
    ours = [ref["y"].astype(np.float16)]
    assert compare_outputs(ours, ref, 4e-2, 4e-2).status == "PASSED"
    assert compare_outputs(ours, ref, 1e-6, 1e-6).status == "FAILED"


def test_the_reference_takes_the_exact_product_where_int8_activations_are_allowed(tmp_path):
    """A 4-bit MatMulNBits with accuracy_level 4: the reference equals ONNX Runtime's result at
    level 0 (the dequantized weights times the activations as they are)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from bot.runner.accuracy import reference_outputs
    rng = np.random.default_rng(3)
    k, n, block = 64, 32, 32
    weights = rng.integers(0, 256, (n, k // block, block // 2)).astype(np.uint8)
    scales = (rng.random(n * k // block) * 0.1).astype(np.float32)
    feeds = {"a": (rng.standard_normal((4, k)) * 3).astype(np.float32)}

    def model(level):
        node = helper.make_node("MatMulNBits", ["a", "w", "s"], ["y"], domain="com.microsoft",
                                K=k, N=n, bits=4, block_size=block, accuracy_level=level)
        graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, k])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(scales, "s")])
        path = tmp_path / f"level{level}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                          helper.make_opsetid("com.microsoft", 1)]), path)
        return path
    exact = ort.InferenceSession(str(model(0)), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(reference_outputs(model(4), feeds)["y"], exact)


def test_rows_onnx_runtime_leaves_unwritten_are_not_compared(tmp_path):
    """A window-sized cache's present rows past the ones it holds are unspecified, and ONNX
    Runtime leaves them as its memory was: the reference masks them, the comparison skips them
    with a note, and an A/B's shared copy of the reference keeps the mask."""
    import onnx

    import compiler
    from bot.runner.accuracy import reference_outputs
    from bot.runner.arrays import load_arrays, save_arrays
    from tests.compiler.onnx.test_group_query_attention import _gqa
    model, feeds = _gqa(1, 5, 8, [4], 5, {"local_window_size": 4, "sliding_window_cache": 1})
    path = tmp_path / "window.onnx"
    onnx.save(model, path)
    reference = reference_outputs(path, feeds)
    assert not np.ma.isMaskedArray(reference["y"])
    unwritten = np.ma.getmaskarray(reference["present_k"])
    assert unwritten[:, :, 5:].all() and not unwritten[:, :, :5].any()     # 5 tokens held of 8 rows
    program = compiler.parse_onnx(str(path))
    program.compile("cpu")
    ours = program.run(feeds)
    ours[1][:, :, 5:] = 123.0                      # whatever sits there is not judged
    result = compare_outputs(ours, reference, 1e-3, 1e-3)
    assert result.status == "PASSED" and "192 elements of 'present_k'" in result.notes[0]
    save_arrays(tmp_path / "ref.npz", reference)
    shared = load_arrays(tmp_path / "ref.npz")
    assert np.array_equal(np.ma.getmaskarray(shared["present_v"]), np.ma.getmaskarray(reference["present_v"]))
    ours[0][0, 0, 0] += 1.0                        # a written element still counts
    assert compare_outputs(ours, shared, 1e-3, 1e-3).status == "FAILED"
