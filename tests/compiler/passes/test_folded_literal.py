"""``folded_literal.fold`` against the plain definition: the chain of literal Adds and Reshapes run
on zeros of the start's lengths in float32, then cut to length one along each axis it does not
vary along. Random chains (seeded) of merges, splits and broadcast literals, and the cases that
decide an axis's variation: a literal that cancels another, a split of a varying axis, a literal
of higher rank, lengths that do not follow."""
import math

import numpy as np
import pytest

from compiler.passes import folded_literal


def plain(lens, steps, dtype):
    mask = np.zeros(lens, np.float32)
    for op, literal, after in steps:
        if op == "reshape":
            mask = mask.reshape(after)
            continue
        try:
            mask = mask + np.asarray(literal, np.float32)
        except ValueError:
            return None
        if mask.shape != tuple(after):
            return None
    for axis in range(mask.ndim):
        first = mask.take([0], axis=axis)
        if mask.shape[axis] > 1 and (mask == first).all():
            mask = first
    return mask.astype(dtype)


def same(lens, steps, dtype=np.float32):
    got, want = folded_literal.fold(lens, steps, dtype), plain(lens, steps, dtype)
    if want is None:
        assert got is None
        return got
    assert got is not None and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    return got


def _literal(rng, lens):
    """Random values over ``lens`` with some axes at length one (broadcast), few distinct values so
    that sums can repeat along an axis."""
    shape = tuple(n if rng.random() < 0.5 else 1 for n in lens)
    drop = rng.integers(0, 2)              # sometimes of lower rank
    shape = shape[drop:] if drop and len(shape) > 1 and shape[0] == 1 else shape
    return rng.integers(-2, 3, shape).astype(np.float32) * (rng.random() < 0.8)


def _reshaped(rng, lens):
    """Merge two neighbouring axes, or split one by a factor of it."""
    lens = list(lens)
    if len(lens) > 1 and rng.random() < 0.5:
        k = int(rng.integers(0, len(lens) - 1))
        return tuple(lens[:k] + [lens[k] * lens[k + 1]] + lens[k + 2:])
    splittable = [k for k, n in enumerate(lens) if any(n % f == 0 for f in (2, 3) if f < n)]
    if not splittable:
        return tuple(lens)
    k = int(rng.choice(splittable))
    f = 2 if lens[k] % 2 == 0 and lens[k] > 2 else 3
    return tuple(lens[:k] + [f, lens[k] // f] + lens[k + 1:])


@pytest.mark.parametrize("seed", range(60))
def test_random_chains_fold_as_the_plain_definition(seed):
    rng = np.random.default_rng(seed)
    lens = tuple(int(n) for n in rng.choice([1, 2, 3, 4, 6], size=int(rng.integers(2, 5))))
    steps, now = [], lens
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.5:
            steps.append(("add", _literal(rng, now), now))
        else:
            after = _reshaped(rng, now)
            steps.append(("reshape", None, after))
            now = after
    assert math.prod(now) == math.prod(lens)
    same(lens, steps, np.float16 if seed % 2 else np.float32)


def test_swin_shifted_window_chain():
    # scores (images * windows, heads, t, t) + bias, split by image, + window mask, merged back
    rng = np.random.default_rng(3)
    images, windows, heads, t = 3, 4, 2, 5
    bias = rng.standard_normal((1, heads, t, t)).astype(np.float32)
    wmask = np.where(rng.random((1, windows, 1, t, t)) < 0.3, -100.0, 0.0).astype(np.float32)
    wmask[0, 0] = 0.0
    steps = [("add", bias, (images * windows, heads, t, t)),
             ("reshape", None, (images, windows, heads, t, t)),
             ("add", wmask, (images, windows, heads, t, t)),
             ("reshape", None, (images * windows, heads, t, t))]
    got = same((images * windows, heads, t, t), steps, np.float16)
    assert got.shape == (images * windows, heads, t, t)
    # without the window mask the sum is the bias alone: length one along the merged axis
    steps[2] = ("add", np.zeros_like(wmask), steps[2][2])
    assert same((images * windows, heads, t, t), steps).shape == (1, heads, t, t)


def test_a_literal_that_cancels_another_leaves_the_axis_constant():
    a = np.arange(6, dtype=np.float32).reshape(1, 6)
    steps = [("add", a, (4, 6)), ("add", -a, (4, 6)),
             ("add", np.arange(4, dtype=np.float32).reshape(4, 1), (4, 6))]
    assert same((4, 6), steps).shape == (4, 1)


def test_a_split_of_a_varying_axis_finds_which_parts_vary():
    # varies along the merged axis of 6 only with its inner part of 3
    a = np.tile(np.arange(3, dtype=np.float32), 2).reshape(1, 6)
    steps = [("add", a, (5, 6)), ("reshape", None, (5, 2, 3))]
    assert same((5, 6), steps).shape == (1, 1, 3)


def test_a_literal_of_higher_rank_and_lengths_that_do_not_follow():
    assert same((2, 3), [("add", np.ones((4, 1, 3), np.float32), (4, 2, 3))]).shape == (1, 1, 1)
    assert same((2, 3), [("add", np.ones((4, 3), np.float32), (2, 3))]) is None       # no broadcast
    assert same((2, 3), [("add", np.ones((1, 3), np.float32), (2, 4))]) is None       # wrong lengths
