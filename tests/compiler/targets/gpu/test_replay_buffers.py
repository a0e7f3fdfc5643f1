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


def _tolerance(fp16):
    return dict(rtol=2e-2, atol=2e-2) if fp16 else dict(rtol=2e-3, atol=2e-3)


def _device_args(program, feeds, host_outputs=False):
    """The inputs on the device, and poisoned output buffers (in host memory if asked)."""
    import cupy
    xp = np if host_outputs else cupy
    return [cupy.asarray(feeds[p.name]) if "#output_" not in p.name
            else xp.full(p.shape.lens, np.nan, dtype=p.shape.dtype)
            for p in program.main.parameters()]


def _recorded(name, seed):
    """(program, its main root) compiled with offload copy off and run three times on the same
    device buffers: eager, recorded, replayed."""
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False)
    args = _device_args(program, feeds_for(program, seed))
    for _ in range(3):
        program.compiled.run_raw(args)
    return program, program.compiled.context.roots["main"]


# fp16 results end in a cast to float32 that writes into the caller's buffer (``outputs_in_place``);
# fp32 convolutions and LSTMs end in a copy into it.
@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", ["conv_bn_relu_add", "attention", "lstm"])
def test_same_buffers_replay_into_the_callers_outputs(name, fp16):
    import cupy
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False, fp16=fp16)
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
        np.testing.assert_allclose(cupy.asnumpy(got), r, **_tolerance(fp16))


@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", ["conv_bn_relu_add", "lstm"])
def test_other_buffers_record_again_and_leave_the_first_untouched(name, fp16):
    import cupy
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False, fp16=fp16)
    root = program.compiled.context.roots["main"]
    first_feeds = feeds_for(program, 1)
    first = _device_args(program, first_feeds)
    for _ in range(3):
        program.compiled.run_raw(first)
    kept = [cupy.asnumpy(a) for a in first]
    for seed in (2, 3, 4):      # new arrays every call, as Program.run makes them
        args = _device_args(program, feeds_for(program, seed))
        outs = program.compiled.run_raw(args)
        buffers = [a for a, p in zip(args, program.main.parameters()) if "#output_" in p.name]
        for got, buffer, r in zip(outs, buffers, _reference(name, seed)):
            assert got is buffer    # this call's buffer, not the one recorded
            np.testing.assert_allclose(cupy.asnumpy(got), r, **_tolerance(fp16))
    assert root.graphs is not None and not root.graphs.borrow
    for before, a in zip(kept, first):      # inputs and outputs alike
        np.testing.assert_array_equal(cupy.asnumpy(a), before)


@pytest.mark.parametrize("name", ["conv_bn_relu_add", "lstm"])
def test_results_copied_into_the_callers_buffers_replay_in_one_graph(name):
    # fp32 results end in copies into the caller's device buffers: recorded with the rest, not
    # launched from Python between graphs
    _program, root = _recorded(name, 6)
    assert [seg[0] for seg in root.graphs.segments] == ["graph"]


@pytest.mark.parametrize("name", ["conv_bn_relu_add", "lstm"])
def test_output_buffers_in_host_memory_are_filled_through_an_eager_copy(name):
    # which copies a recording captures depends on where the caller's buffers live: a call that
    # moves them between host and device memory is recorded again
    import cupy
    program, root = _recorded(name, 7)
    for seed, on_host in ((8, True), (9, True), (10, False), (11, True)):
        args = _device_args(program, feeds_for(program, seed), host_outputs=on_host)
        outs = program.compiled.run_raw(args)
        buffers = [a for a, p in zip(args, program.main.parameters()) if "#output_" in p.name]
        for got, buffer, r in zip(outs, buffers, _reference(name, seed)):
            assert got is buffer
            np.testing.assert_allclose(cupy.asnumpy(got), r, rtol=2e-3, atol=2e-3)
        kinds = [seg[0] for seg in root.graphs.segments]
        assert ("eager" in kinds) == on_host
