"""Which steps a CUDA-graph recording captures (``graphs.capture_plan``): a copy or a pick from a
tuple is captured when its operands are device values, and runs eagerly otherwise."""
from types import SimpleNamespace

import compiler
from compiler.targets.gpu.graphs import capture_plan, record_on_device_operands
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import build


class Value:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def _step(name, inputs, capturable=True, on_device=False):
    def fn(*args):
        return args
    if on_device:
        record_on_device_operands(fn)
    else:
        fn.capturable = capturable
    return (Value(name), fn, tuple(inputs), ())


class HostBuffer:
    """An argument the plan must take for host memory."""


def _body():
    x, out0, out1 = Value("x"), Value("out0"), Value("out1")
    kernel = _step("kernel", [x])
    host_call = _step("host_call", [x], capturable=False)             # another root, a host op
    pick_recorded = _step("pick_recorded", [kernel[0]], on_device=True)
    pick_eager = _step("pick_eager", [host_call[0]], on_device=True)
    copy0 = _step("copy0", [pick_recorded[0], out0], on_device=True)
    copy1 = _step("copy1", [kernel[0], out1], on_device=True)
    steps = [kernel, host_call, pick_recorded, pick_eager, copy0, copy1]
    return SimpleNamespace(params=[x, out0, out1], constants={}, steps=steps)


def _device(a):
    return not isinstance(a, HostBuffer)


def test_copies_and_picks_on_device_values_are_captured():
    body = _body()
    plan = capture_plan(body, [object(), object(), object()], _device)
    assert dict(zip([s[0].name for s in body.steps], plan)) == {
        "kernel": True, "host_call": False, "pick_recorded": True, "pick_eager": False,
        "copy0": True, "copy1": True}


def test_a_copy_into_a_host_buffer_stays_eager():
    body = _body()
    plan = capture_plan(body, [object(), HostBuffer(), object()], _device)
    assert dict(zip([s[0].name for s in body.steps], plan))["copy0"] is False
    assert dict(zip([s[0].name for s in body.steps], plan))["copy1"] is True


def test_a_host_argument_leaves_every_copy_of_it_eager():
    x = Value("x")
    copy = _step("copy", [x, Value("out")], on_device=True)
    body = SimpleNamespace(params=[x, copy[2][1]], constants={}, steps=[copy])
    assert capture_plan(body, [HostBuffer(), object()], _device) == [False]


def test_the_lowered_copies_and_picks_say_they_record_on_device_operands():
    program = compiler.parse_onnx(build("lstm")).compile(
        "gpu", offload_copy=False, gpu_options=GpuOptions(emulate=True))
    steps = program.compiled.context.roots["main"].body.steps
    marked = {ins.op for ins, fn, _i, _d in steps if getattr(fn, "capturable_on_device", False)}
    assert marked == {"copy", "get_tuple_elem"}
