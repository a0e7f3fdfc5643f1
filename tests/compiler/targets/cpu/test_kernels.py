"""The cpu target's fast kernels agree with the reference computations (random shapes and
attributes, seeded), and decline what they do not handle."""
import numpy as np
import pytest
from scipy import special

from compiler.ir import Program, Shape
from compiler.targets.cpu.kernels import pick_kernel
from compiler.targets.cpu.kernels.conv import conv_kernel
from compiler.targets.cpu.kernels.einsum import einsum_kernel
from compiler.targets.cpu.kernels.erf import erf_f32
from compiler.targets.cpu.kernels.pool import maxpool_kernel
from compiler.targets.ref.plan import reference_kernel

RNG = np.random.default_rng(3)


def conv_ins(n, c, h, w, m, k, stride, pad, dilation, group, bias=True):
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (n, c, h, w)))
    wt = p.main.add_literal(RNG.standard_normal((m, c // group, k, k)).astype(np.float32))
    inputs = [x, wt]
    if bias:
        inputs.append(p.main.add_literal(RNG.standard_normal(m).astype(np.float32)))
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "dilations": [dilation, dilation],
             "pads": [pad, pad + (stride > 1), pad, pad], "group": group}
    return p.main.add_instruction("Conv", inputs, attrs=attrs)


@pytest.mark.parametrize("case", [
    (1, 3, 17, 15, 8, 7, 2, 3, 1, 1),    # stem-like, asymmetric padding
    (2, 8, 9, 9, 16, 3, 1, 1, 1, 1),     # batch 2
    (1, 16, 8, 8, 32, 1, 1, 0, 1, 1),    # pointwise: no im2col
    (1, 16, 8, 8, 32, 1, 2, 0, 1, 1),    # strided 1x1 downsample
    (1, 16, 10, 10, 16, 3, 1, 1, 1, 16),  # depthwise
    (1, 16, 10, 10, 32, 3, 2, 1, 1, 4),  # grouped
    (1, 4, 12, 12, 6, 3, 1, 2, 2, 1),    # dilated
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_kernel_matches_reference(case, bias):
    ins = conv_ins(*case, bias=bias)
    x = RNG.standard_normal(ins.inputs[0].shape.lens).astype(np.float32)
    args = [x] + [i.value for i in ins.inputs[1:]]
    fast = conv_kernel(ins)
    assert fast is not None
    want = reference_kernel(ins)(*args)
    for _ in range(2):  # buffers are reused between runs
        got = fast(*args)
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_kernel_declines_runtime_weights_and_float16():
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (1, 2, 5, 5)))
    w = p.main.add_parameter("w", Shape("float32", (3, 2, 3, 3)))
    attrs = {"kernel_shape": [3, 3], "strides": [1, 1], "dilations": [1, 1], "pads": [0] * 4, "group": 1}
    assert conv_kernel(p.main.add_instruction("Conv", [x, w], attrs=attrs)) is None
    h = p.main.add_parameter("h", Shape("float16", (1, 2, 5, 5)))
    wl = p.main.add_literal(np.ones((3, 2, 3, 3), np.float16))
    ins = p.main.add_instruction("Conv", [h, wl], attrs=attrs)
    assert conv_kernel(ins) is None
    assert pick_kernel(ins) is not None  # falls back to the reference


@pytest.mark.parametrize("k, stride, pad", [(3, 2, 1), (2, 2, 0), (3, 1, 1)])
def test_maxpool_kernel_matches_reference(k, stride, pad):
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (1, 4, 11, 9)))
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "dilations": [1, 1],
             "pads": [pad] * 4, "ceil_mode": 0, "storage_order": 0, "indices": False}
    ins = p.main.add_instruction("MaxPool", [x], attrs=attrs)
    v = RNG.standard_normal((1, 4, 11, 9)).astype(np.float32)
    np.testing.assert_array_equal(maxpool_kernel(ins)(v), reference_kernel(ins)(v))


@pytest.mark.parametrize("eq, shapes", [
    ("abc,cde->abde", [(2, 5, 6), (6, 3, 4)]),
    ("aecd,abcd->acbe", [(2, 5, 3, 4), (2, 6, 3, 4)]),
    ("acbe,aecd->abcd", [(2, 3, 6, 5), (2, 5, 3, 4)]),
    ("abcd,cde->abe", [(2, 5, 3, 4), (3, 4, 7)]),
    ("ab,bc->ac", [(1, 7), (7, 3)]),
    ("ij,kj->ik", [(4, 5), (6, 5)]),
])
def test_einsum_kernel_matches_numpy(eq, shapes):
    p = Program()
    ins = [p.main.add_parameter(f"x{i}", Shape("float32", s)) for i, s in enumerate(shapes)]
    e = p.main.add_instruction("Einsum", ins, attrs={"equation": eq})
    args = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    got = einsum_kernel(e)(*args)
    np.testing.assert_allclose(got, np.einsum(eq, *args), rtol=1e-5, atol=1e-5)
    assert got.shape == tuple(e.shape.lens)


@pytest.mark.parametrize("eq", ["ii->i", "ij,jk,kl->il", "ij->"])
def test_einsum_kernel_declines_what_is_not_one_matmul(eq):
    shapes = {"ii->i": [(3, 3)], "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)], "ij->": [(2, 3)]}[eq]
    p = Program()
    ins = [p.main.add_parameter(f"x{i}", Shape("float32", s)) for i, s in enumerate(shapes)]
    assert einsum_kernel(p.main.add_instruction("Einsum", ins, attrs={"equation": eq})) is None


def test_erf_float32_within_float32_resolution():
    x = np.concatenate([np.linspace(-6, 6, 10001), RNG.standard_normal(1000) * 3]).astype(np.float32)
    got = erf_f32(x)
    assert got.dtype == np.float32
    assert np.abs(got.astype(np.float64) - special.erf(x.astype(np.float64))).max() < 1e-6
    assert got[0] == -1.0 and got[5000] == 0.0


@pytest.mark.parametrize("a, b", [((2, 5, 6), (6, 4)), ((2, 3, 5, 6), (6, 7))])
def test_matmul_kernel_matches_reference(a, b):
    from compiler.targets.cpu.kernels.matmul import matmul_kernel
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", a))
    w = p.main.add_parameter("w", Shape("float32", b))
    ins = p.main.add_instruction("MatMul", [x, w])
    args = [RNG.standard_normal(a).astype(np.float32), RNG.standard_normal(b).astype(np.float32)]
    np.testing.assert_allclose(matmul_kernel(ins)(*args), reference_kernel(ins)(*args), rtol=1e-5, atol=1e-5)


@pytest.fixture
def many_threads(monkeypatch):
    """Split even tiny products over 3 chunks, so the parallel paths run in tests."""
    import compiler.targets.cpu.kernels.conv as conv_module
    import compiler.targets.cpu.threads as threads
    for module in (conv_module, threads):
        monkeypatch.setattr(module, "MIN_PARALLEL_MACS", 1)
        monkeypatch.setattr(module, "MIN_PARALLEL_COPY", 1)
    monkeypatch.setattr(threads, "thread_count", lambda: 3)


@pytest.mark.parametrize("case", [
    (1, 8, 9, 9, 16, 3, 1, 1, 1, 1),     # more columns than channels: split by columns
    (2, 16, 3, 3, 64, 1, 1, 0, 1, 1),    # more channels than columns: split by channels
    (1, 16, 10, 10, 32, 3, 2, 1, 1, 4),  # grouped
])
def test_conv_kernel_split_over_threads_matches_reference(many_threads, case):
    from compiler.targets.cpu.kernels.conv import fused_conv_kernel
    ins = conv_ins(*case)
    x = RNG.standard_normal(ins.inputs[0].shape.lens).astype(np.float32)
    residual = RNG.standard_normal(ins.shape.lens).astype(np.float32)
    args = [x] + [i.value for i in ins.inputs[1:]]
    want = np.maximum(reference_kernel(ins)(*args) + residual, 0)
    ins.attrs["relu"] = True
    np.testing.assert_allclose(fused_conv_kernel(ins)(*args, residual), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("eq, shapes", [("abc,cd->abd", [(2, 5, 6), (6, 40)]),
                                        ("abc,cd->abd", [(2, 40, 6), (6, 3)]),
                                        ("abcd,abde->abce", [(4, 2, 5, 6), (4, 2, 6, 3)])])
def test_matmuls_split_over_threads_match_numpy(many_threads, eq, shapes):
    p = Program()
    ins = [p.main.add_parameter(f"x{i}", Shape("float32", s)) for i, s in enumerate(shapes)]
    e = p.main.add_instruction("Einsum", ins, attrs={"equation": eq})
    args = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    np.testing.assert_allclose(einsum_kernel(e)(*args), np.einsum(eq, *args), rtol=1e-5, atol=1e-5)
