"""Exported rotary embeddings become one RotaryEmbedding in the gpu target's passes; near misses
stay as they are. Checked without a GPU: the ops left after the passes, and the rewritten
programs on the emulated target against the reference."""
import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.passes.rotary_cases import feeds, rotary_block


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


@pytest.mark.parametrize("kwargs", [{}, {"order": "cos*x"}, {"cache_batch": 2}, {"rotated": 4}])
def test_the_rotation_becomes_one_rotary_embedding(kwargs):
    ops = _ops(rotary_block(**kwargs))
    assert ops.count("RotaryEmbedding") == 1 and "Concat" not in ops and "Neg" not in ops


def test_a_partial_rotation_names_how_many_features_turn():
    program = compiler.parse_onnx(rotary_block(rotated=4))
    prepare_program(program, "gpu")
    rotary = next(i for i in program.main.instructions if i.op == "RotaryEmbedding")
    assert rotary.attrs["rotary_embedding_dim"] == 4 and rotary.inputs[0].shape.lens[-1] == 8


@pytest.mark.parametrize("near_miss", [{"halves_equal": False}, {"cache_heads": 3}, {"swap_halves": True},
                                       {"extra_output": "rot"}, {"extra_output": "a"}, {"cos_input": True}])
def test_near_misses_are_left_alone(near_miss):
    assert "RotaryEmbedding" not in _ops(rotary_block(**near_miss))


def _check(onnx_model, given, tol, fp16=False):
    want = compiler.parse_onnx(onnx_model).compile("ref").run(given)
    got = compiler.parse_onnx(onnx_model).compile("gpu", fp16=fp16, gpu_options=GpuOptions(emulate=True)).run(given)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)


@pytest.mark.parametrize("kwargs", [{}, {"order": "cos*x"}, {"cache_batch": 2}, {"halves_equal": False},
                                    {"swap_halves": True}, {"extra_output": "rot"}, {"rotated": 4},
                                    {"rotated": 4, "extra_output": "turned"}])
def test_rewritten_programs_match_the_reference_in_emulation(kwargs):
    _check(rotary_block(**kwargs), feeds(), 1e-5)


def test_fp16_programs_stay_close_in_emulation():
    _check(rotary_block(), feeds(), 3e-3, fp16=True)
    _check(rotary_block(dtype="float16"), feeds(dtype="float16"), 3e-3)


def test_a_cos_fed_at_run_time_is_left_to_the_exported_ops():
    _check(rotary_block(cos_input=True), feeds(cos_input=True), 1e-5)
