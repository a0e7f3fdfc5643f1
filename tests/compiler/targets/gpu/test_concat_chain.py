"""Concatenations that extend one another share one buffer (GPU target), checked without a GPU:
which concatenations chain, and that chained results equal the reference through the emulated
device (NumPy standing in for CuPy), including a shorter concatenation returned beside a longer."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.ir import Program, Shape
from compiler.targets.gpu.concat_chain import find_chains
from compiler.targets.gpu.kernels.pointwise import memory_order

from tests.compiler.targets.gpu.cases import build, feeds_for, init, model, vi, w


def _concats(*input_lists, axis=1):
    p = Program()
    m = p.main
    params = {n: m.add_parameter(n, Shape("float32", (2, 3, 4, 4))) for n in "abcd"}
    made = [m.add_instruction("Concat", [params[n] for n in names], {"axis": axis}) for names in input_lists]
    m.add_return(made)
    return m, made


def test_prefix_concatenations_chain_and_branches_stay_plain():
    m, (ab, abc, abd, ba) = _concats("ab", "abc", "abd", "ba")
    chains = find_chains(m)
    assert chains[ab] is chains[abc]
    assert chains[abc].members == [ab, abc]          # module order: the first allocates
    assert chains[abc].offsets == [0, 3, 6, 9]
    assert abd not in chains and ba not in chains    # a branch and a reordering: plain copies


def test_concatenations_along_other_axes_do_not_join():
    m, (ab, abc) = _concats("ab", "abc")
    ab.attrs["axis"] = 2
    assert find_chains(m) == {}


def test_channel_slice_of_a_channels_last_buffer_runs_in_memory_order():
    buf = np.zeros((2, 5, 6, 16), np.float32).transpose(0, 3, 1, 2)     # (N, C, H, W), stored NHWC
    assert memory_order(buf[:, :12]) == (0, 2, 3, 1)
    assert memory_order(buf[:, :, :, ::2]) == (0, 2, 3, 1)               # every other pixel: still
    assert memory_order(buf[:, ::2]) is None                             # channels apart: no order


def _dense_with_inner_output():
    """x -> f1 = conv(x); cat1 = [x, f1]; f2 = conv(relu(cat1)); y = [x, f1, f2]; cat1 returned too."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["f1"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["x", "f1"], ["cat1"], axis=1),
             helper.make_node("Relu", ["cat1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["f2"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["x", "f1", "f2"], ["y"], axis=1)]
    return model(nodes, [vi("x", (2, 4, 6, 6))], [vi("y", None), vi("cat1", None)],
                 [init("w1", w(3, 4, 3, 3)), init("w2", w(5, 7, 3, 3))])


@pytest.mark.parametrize("case", ["dense_block", "inner_output"])
def test_chained_concatenations_match_reference_in_emulation(case):
    from compiler.targets.gpu.options import GpuOptions
    onnx_model = build("dense_block") if case == "dense_block" else _dense_with_inner_output()
    ref_p = compiler.parse_onnx(onnx_model)
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=GpuOptions(emulate=True))
    steps = program.compiled.context.roots["main"].body.steps
    assert sum(getattr(fn, "path", "") == "concat-chain" for _i, fn, _a, _d in steps) >= 2
    ref_c = ref_p.compile("ref")
    for seed in (1, 2):                       # a second run fills a fresh buffer
        feeds = feeds_for(ref_p, seed)
        for g, r in zip(program.run(feeds), ref_c.run(feeds)):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_memory_plan_counts_one_buffer_per_chain():
    """The chain's first concatenation holds the longest one's bytes; the others are its slices."""
    from compiler.targets.gpu import memory
    m, (ab, abc) = _concats("ab", "abc")
    size = memory._bytes                                  # bytes, rounded to the plan's alignment
    chained = memory.plan(m)
    assert chained.sizes == {ab: size(abc.shape)} and abc not in chained.offsets
    plain = memory.plan(m, {})                            # no chains: each concatenation apart
    assert plain.sizes == {ab: size(ab.shape), abc: size(abc.shape)}
    assert plain.peak_bytes == size(ab.shape) + size(abc.shape) > chained.peak_bytes
