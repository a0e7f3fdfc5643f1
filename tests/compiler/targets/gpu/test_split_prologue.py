"""A pointwise step read only by a split convolution defers to it (GPU target), checked without a
GPU: which steps defer, how operands are read as rows of pixels, the generated kernel text. The
kernel itself runs against NumPy in tests/compiler/targets/gpu/test_ops.py on a GPU."""
import numpy as np
import pytest

from compiler.targets.gpu import split_prologue
from compiler.targets.gpu.kernels import pointwise_split
from compiler.targets.gpu.pointwise_codegen import UnsupportedPointwise

BN_RELU = [{"op": "Mul", "attrs": {}, "args": ["x0", "x1"], "dtype": "float32"},
           {"op": "Add", "attrs": {}, "args": ["t0", "x2"], "dtype": "float32"},
           {"op": "Relu", "attrs": {}, "args": ["t1"], "dtype": "float32"}]


class _Ins:
    def __init__(self, name):
        self.name = name


def _pointwise(dtypes=("float32",) * 3, lens=(2, 8, 5, 5)):
    def fn(*args):
        return "computed"
    fn.pointwise_body, fn.in_dtypes, fn.out_lens = BN_RELU, list(dtypes), lens
    return fn


def _conv():
    def fn(x, w):
        return x
    fn.split_of = lambda x: x
    return fn


def _steps(pw_fn=None, conv_fn=None, extra_reader=False):
    x, a, b, w = (_Ins(n) for n in "xabw")
    pw, conv, other = _Ins("pw"), _Ins("conv"), _Ins("other")
    steps = [(pw, pw_fn or _pointwise(), (x, a, b), ()), (conv, conv_fn or _conv(), (pw, w), (pw,))]
    if extra_reader:
        steps.append((other, lambda v: v, (pw,), ()))
    return steps, pw


def test_a_pointwise_read_only_by_a_split_convolution_defers():
    steps, pw = _steps()
    assert split_prologue.defer_split_producers(steps, returned=set()) == 1
    fn = steps[0][1]
    assert fn.path == "pointwise-deferred"
    deferred = fn("X", "A", "B")
    assert isinstance(deferred, split_prologue.DeferredPointwise)
    assert deferred.args == ("X", "A", "B") and deferred.value() == "computed"


@pytest.mark.parametrize("why", ["second reader", "returned", "exact convolution", "fp64 input", "rank 2"])
def test_pointwise_steps_that_must_stay_written(why):
    conv = _conv()
    if why == "exact convolution":
        conv.split_of = None
    pw = _pointwise(("float64", "float32", "float32") if why == "fp64 input" else ("float32",) * 3,
                    (16, 8) if why == "rank 2" else (2, 8, 5, 5))
    steps, pw_ins = _steps(pw, conv, extra_reader=why == "second reader")
    returned = {pw_ins} if why == "returned" else set()
    assert split_prologue.defer_split_producers(steps, returned) == 0
    assert steps[0][1] is pw


def test_operands_read_as_rows_of_pixels():
    lens = (2, 12, 5, 6)
    wide = np.zeros((2, 5, 6, 16), np.float32).transpose(0, 3, 1, 2)     # channels-last buffer
    strides = pointwise_split.operand_strides
    assert strides(wide[:, :12], 12, lens) == (16, 1)                 # a channel slice of it
    assert strides(np.zeros((2, 5, 6, 12), np.float32).transpose(0, 3, 1, 2), 12, lens) == (12, 1)
    assert strides(np.zeros((1, 12, 1, 1), np.float32), 12, lens) == (0, 1)
    assert strides(np.zeros((12, 1, 1), np.float32), 12, lens) == (0, 1)
    assert strides(np.zeros((1,), np.float32), 12, lens) == (0, 0)
    assert strides(np.zeros(lens, np.float32), 12, lens) is None       # NCHW: not rows of pixels
    assert strides(np.zeros((6,), np.float32), 12, lens) is None       # broadcasts along W


def test_generated_source_has_both_kernels_and_takes_only_fp32_results():
    text = pointwise_split.source(BN_RELU, 3)
    assert 'extern "C" __global__ void perfbot_pw_split(' in text
    assert 'extern "C" __global__ void perfbot_pw_split4(' in text
    assert "perfbot_pw_body(v0.w, v1.w, v2.w)" in text
    half = [dict(BN_RELU[0], dtype="float16")] + BN_RELU[1:]
    with pytest.raises(UnsupportedPointwise):
        pointwise_split.source(half, 3)
    with pytest.raises(UnsupportedPointwise):
        pointwise_split.source(BN_RELU[:2] + [dict(BN_RELU[2], dtype="float64")], 3)
