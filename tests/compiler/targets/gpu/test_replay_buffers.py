"""Replays on the caller's own device buffers (offload copy off), against the reference."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import build, feeds_for

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _reference(name, seed):
    program = compiler.parse_onnx(build(name)).compile("ref")
    return [np.asarray(o) for o in program.run(feeds_for(program, seed))]


def _device_args(program, feeds):
    import cupy
    return [cupy.asarray(feeds[p.name]) if "#output_" not in p.name
            else cupy.full(p.shape.lens, np.nan, dtype=p.shape.dtype)   # poisoned output buffer
            for p in program.main.parameters()]


@pytest.mark.parametrize("name", ["conv_bn_relu_add", "attention", "lstm"])
def test_same_buffers_replay_into_the_callers_outputs(name):
    import cupy
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False)
    root = program.compiled.context.roots["main"]
    feeds = feeds_for(program, 5)
    args = _device_args(program, feeds)
    ref = _reference(name, 5)
    for _ in range(4):      # eager, recorded, replayed, replayed
        outs = program.compiled.run_raw(args)
    assert root.graphs is not None and root.graphs.borrow
    outputs = [a for a, p in zip(args, program.main.parameters()) if "#output_" in p.name]
    for got, buffer, r in zip(outs, outputs, ref):
        assert got is buffer        # written where the caller asked
        np.testing.assert_allclose(cupy.asnumpy(got), r, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["conv_bn_relu_add", "lstm"])
def test_other_buffers_record_again_and_leave_the_first_untouched(name):
    import cupy
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False)
    root = program.compiled.context.roots["main"]
    first_feeds = feeds_for(program, 1)
    first = _device_args(program, first_feeds)
    for _ in range(3):
        program.compiled.run_raw(first)
    kept = [cupy.asnumpy(a) for a in first]
    for seed in (2, 3, 4):      # new arrays every call, as Program.run makes them
        outs = program.compiled.run_raw(_device_args(program, feeds_for(program, seed)))
        for got, r in zip(outs, _reference(name, seed)):
            np.testing.assert_allclose(cupy.asnumpy(got), r, rtol=2e-3, atol=2e-3)
    assert root.graphs is not None and not root.graphs.borrow
    for before, p, a in zip(kept, program.main.parameters(), first):
        if "#output_" not in p.name:
            np.testing.assert_array_equal(cupy.asnumpy(a), before)
