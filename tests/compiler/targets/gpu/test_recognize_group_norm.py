"""PyTorch's exported GroupNorm chain becomes one GroupNormalization on the gpu target and its SiLU
folds into it; near misses stay as they are (checked without a GPU: passes, and NumPy standing in
for CuPy to compare with the reference)."""
import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.norm_cases import check_in_emulation, group_norm_chain


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


def _norms(onnx_model, **extra):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu", **extra)
    return [i for i in program.main.instructions if i.op == "GroupNormalization"]


@pytest.mark.parametrize("groups", [1, 32])
def test_chain_becomes_one_group_norm_taking_the_silu(groups):
    (norm,) = _norms(group_norm_chain(groups=groups))
    assert norm.attrs["num_groups"] == groups and norm.attrs.get("swish")
    assert "InstanceNormalization" not in _ops(group_norm_chain(groups=groups))


def test_without_silu_the_norm_is_the_output():
    (norm,) = _norms(group_norm_chain(silu=False))
    assert not norm.attrs.get("swish") and norm.attrs["epsilon"] == pytest.approx(1e-5)


@pytest.mark.parametrize("near_miss", [
    {"inst_scale": 2.0},                        # the instance norm scales the groups
    {"extra_output": "i"}])                     # the instance norm is read elsewhere
def test_near_misses_keep_the_instance_norm(near_miss):
    assert "InstanceNormalization" in _ops(group_norm_chain(**near_miss))


def test_norm_read_elsewhere_keeps_its_affine_apart():
    """The reshaped norm is an output too: it becomes the group norm, Mul and Add stay after it."""
    (norm,) = _norms(group_norm_chain(extra_output="b"))
    assert not norm.attrs.get("swish") and norm.users and all(u.op == "fused_pointwise" or u.op.startswith("copy")
                                                               for u in norm.users)


def test_gamma_not_per_channel_stays_a_multiply():
    (norm,) = _norms(group_norm_chain(gamma_shape=(1, 1, 7), silu=False))
    assert not norm.attrs.get("swish")
    assert "fused_pointwise" in _ops(group_norm_chain(gamma_shape=(1, 1, 7), silu=False))


def test_silu_not_folded_in_emulation():
    (norm,) = _norms(group_norm_chain(), gpu_options=GpuOptions(emulate=True))
    assert not norm.attrs.get("swish")


@pytest.mark.parametrize("kwargs", [{}, {"groups": 1}, {"gamma_shape": (1, 1, 7)}, {"inst_scale": 2.0},
                                    {"extra_output": "b"}])
def test_rewritten_graph_matches_reference_in_emulation(kwargs):
    feeds = {"x": np.random.default_rng(8).standard_normal((2, 64, 9, 7)).astype(np.float32) * 2 + 1}
    check_in_emulation(group_norm_chain(**kwargs), feeds, 1e-4)
