"""The split-bf16 arithmetic (NumPy definition in ``kernels/split_bf16``): rounding, the hi/lo
representation and the accuracy of the three-product GEMM against fp64 and against TF32."""
import ml_dtypes
import numpy as np

from compiler.targets.gpu.kernels import split_bf16


def _values(seed=0, n=20000):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, n).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38, 1e-45, 1.17549435e-38,
                        1.00390625, 1.0078125, 1.01171875], dtype=np.float32)
    return np.concatenate([v, special])


def test_bf16_round_is_round_to_nearest_even():
    v = _values()
    expect = v.astype(ml_dtypes.bfloat16).astype(np.float32)
    got = split_bf16.bf16_round(v)
    finite = np.isfinite(expect)
    # ml_dtypes rounds the largest fp32 values up to inf; the split keeps them finite (truncated).
    np.testing.assert_array_equal(got[finite], expect[finite])
    assert np.isnan(got[np.isnan(v)]).all() and (got[np.isinf(v)] == v[np.isinf(v)]).all()
    assert np.isfinite(got[np.isfinite(v)]).all()


def test_hi_plus_lo_holds_sixteen_bits():
    v = _values(1)
    v = v[np.isfinite(v) & (np.abs(v) > 1e-30)]
    hi, lo = split_bf16.hi_lo(v)
    rel = np.abs((hi.astype(np.float64) + lo) - v) / np.abs(v)
    assert rel.max() <= 2.0 ** -16


def _tf32(x):
    """TF32 inputs: the mantissa cut to 10 bits, as tensor cores read fp32."""
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def test_split_product_is_near_fp32_and_far_better_than_tf32():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 576)).astype(np.float32)
    b = rng.standard_normal((576, 48)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(exact).max()
    split_err = np.abs(split_bf16.matmul_reference(a, b) - exact).max() / scale
    tf32_err = np.abs(_tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64) - exact).max() / scale
    fp32_err = np.abs((a @ b) - exact).max() / scale
    assert split_err <= 2e-5
    assert tf32_err >= 20 * split_err
    assert fp32_err <= split_err * 10   # fp32 itself is the better one, within an order of magnitude


def test_split_rows_are_padded_to_eight():
    assert [split_bf16.width(k) for k in (1, 3, 8, 147, 576)] == [8, 16, 24, 448, 1728]

