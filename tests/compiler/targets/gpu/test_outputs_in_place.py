"""A root's result is written by its producer straight into the caller's output buffer
(``outputs_in_place``), checked without a GPU: which copies go, and whole programs on the
emulated target against the reference. On a GPU, ``test_replay_buffers`` checks the same through
CUDA-graph replays on the caller's buffers and on private ones."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import Backend
from compiler.targets.gpu.options import GpuOptions
from compiler.targets.gpu.outputs_in_place import write_outputs_in_place

from tests.compiler.targets.gpu.cases import build, feeds_for

EMULATED = GpuOptions(emulate=True)
HOST = Backend(np, on_gpu=False)


class _Shape:
    def __init__(self, lens, dtype="float32"):
        self.lens, self.dtype = lens, dtype


class _Ins:
    def __init__(self, name, op="fused_pointwise", lens=(2, 3), dtype="float32"):
        self.name, self.op, self.shape = name, op, _Shape(lens, dtype)


def _producer(into=True):
    def fn(x, out=None):
        result = x * 2
        if out is None:
            return result
        out[...] = result
        return out
    if into:
        fn.writes_into = True
    return fn


def _copy(src, dst):
    dst[...] = src
    return dst


def _steps(producer=None, dst_name="main:#output_0", dst_lens=(2, 3), extra_reader=False):
    x = _Ins("x", op="@param")
    pw = _Ins("pw")
    dst = _Ins(dst_name, op="@param", lens=dst_lens)
    copy = _Ins("copy", op="copy", lens=dst_lens)
    steps = [(pw, producer or _producer(), (x,), ()), (copy, _copy, (pw, dst), (pw, dst))]
    if extra_reader:
        steps.append((_Ins("other"), lambda v: v, (pw,), ()))
    return steps, x, pw, dst, copy


def _run(steps, env):
    for ins, fn, inputs, _dead in steps:
        env[ins] = fn(*[env[i] for i in inputs])
    return env


def test_the_producer_writes_into_the_output_buffer_and_the_copy_goes():
    steps, x, pw, dst, copy = _steps()
    assert write_outputs_in_place(steps, returned={copy}, backend=HOST) == [pw]
    assert steps[0][2] == (x, dst) and steps[1][2] == (pw,)
    assert steps[1][1].path == "output-written-in-place"
    buffer = np.full((2, 3), np.nan, np.float32)
    env = _run(steps, {x: np.arange(6, dtype=np.float32).reshape(2, 3), dst: buffer})
    assert env[copy] is buffer and env[pw] is buffer
    np.testing.assert_array_equal(buffer, np.arange(6).reshape(2, 3) * 2)


@pytest.mark.parametrize("why", ["no out=", "second reader", "returned itself", "not an output",
                                 "other shape"])
def test_copies_that_must_stay(why):
    steps, _x, pw, _dst, copy = _steps(
        producer=_producer(into=why != "no out="), extra_reader=why == "second reader",
        dst_name="main:y" if why == "not an output" else "main:#output_0",
        dst_lens=(3, 2) if why == "other shape" else (2, 3))
    before = list(steps)
    returned = {copy, pw} if why == "returned itself" else {copy}
    assert write_outputs_in_place(steps, returned=returned, backend=HOST) == []
    assert steps == before


def _lowered_main(program):
    return program.compiled.context.roots["main"].body


@pytest.mark.parametrize("name, fp16", [("chain", False), ("conv_bn_relu_add", True), ("attention", True), ("lstm", True)])
def test_emulated_programs_write_their_results_where_the_caller_asks(name, fp16):
    model = build(name)
    program = compiler.parse_onnx(model).compile("gpu", fp16=fp16, offload_copy=False,
                                                 gpu_options=EMULATED)
    paths = [getattr(fn, "path", "") for _ins, fn, _inputs, _dead in _lowered_main(program).steps]
    assert "output-written-in-place" in paths
    root = program.compiled.context.roots["main"]
    assert root.body.written_in_place       # and the memory plan gives them no bytes of the arena
    assert not any(ins in root.plan.offsets for ins in root.body.written_in_place)
    assert not any(ins.op == "copy" and getattr(fn, "path", "") != "output-written-in-place"
                   for ins, fn, _i, _d in _lowered_main(program).steps)
    feeds = {k: v for k, v in feeds_for(program, 7).items() if "#output_" not in k}
    reference = compiler.parse_onnx(model).compile("ref").run(feeds)
    args = [feeds[p.name] if "#output_" not in p.name else np.full(p.shape.lens, np.nan, p.shape.dtype)
            for p in program.main.parameters()]
    outs = program.compiled.run_raw(args)
    buffers = [a for a, p in zip(args, program.main.parameters()) if "#output_" in p.name]
    tol = 2e-2 if fp16 else 1e-5
    for got, buffer, want in zip(outs, buffers, reference):
        assert got is buffer
        np.testing.assert_allclose(buffer, want, rtol=tol, atol=tol)
