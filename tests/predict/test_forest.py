"""The native LightGBM evaluator scores as lightgbm does, and says clearly when model text is bad."""

import re

import numpy as np
import pytest

from itercast import _native
from itercast.predict.forest import ModelTextError, NativeBooster

lightgbm = pytest.importorskip("lightgbm")


def train(x, y, rounds=25, categorical="auto", **params):
    data = lightgbm.Dataset(x, y, categorical_feature=categorical, free_raw_data=False)
    return lightgbm.train({"objective": "regression", "verbose": -1, "num_threads": 1, "seed": 0, **params}, data,
                          num_boost_round=rounds)


def assert_same_scores(booster, x, raw_score=True):
    expected = booster.predict(x, raw_score=raw_score)
    got = NativeBooster.from_booster(booster).predict(x, raw_score=raw_score)
    assert got.dtype == np.float64 and got.shape == expected.shape
    # float32 rows compared in double as LightGBM does: equal up to summation rounding
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(expected).max())))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 8)).astype(np.float32)
    y = 3 * x[:, 0] + np.sin(x[:, 1]) + x[:, 2] * x[:, 3]
    return rng, x, y


def with_nans(rng, x, fraction):
    x = x.copy()
    x[rng.random(x.shape) < fraction] = np.nan
    return x


def with_zeros(rng, x, fraction):
    x = x.copy()
    x[rng.random(x.shape) < fraction] = 0
    return x


def test_numerical_splits(data):
    _, x, y = data
    booster = train(x, y, num_leaves=31)
    assert_same_scores(booster, x)
    assert_same_scores(booster, x, raw_score=False)


def test_nan_learnt_as_missing_and_nan_unseen_in_training(data):
    rng, x, y = data
    seen = with_nans(rng, x, 0.1)
    assert_same_scores(train(seen, y, num_leaves=31), with_nans(rng, x, 0.2))
    # trained without NaN (missing type None): NaN reads as 0
    assert_same_scores(train(x, y, num_leaves=31), with_nans(rng, x, 0.2))


def test_zero_as_missing(data):
    rng, x, y = data
    zeros = with_zeros(rng, x, 0.3)
    booster = train(zeros, y, num_leaves=31, zero_as_missing=True)
    assert_same_scores(booster, zeros)
    assert_same_scores(booster, with_nans(rng, zeros, 0.1))


def test_values_lightgbm_reads_as_zero(data):
    """LightGBM's dense reader drops |x| <= 1e-35 (kZeroThreshold): such values score as 0."""
    rng, x, y = data
    zeros = with_zeros(rng, x, 0.4)
    booster = train(zeros, y, num_leaves=31)
    tiny = zeros.copy()
    pick = tiny == 0
    tiny[pick] = rng.choice(np.array([1e-36, -1e-36, 1e-35, -1e-35, -0.0, 1e-38], dtype=np.float32), pick.sum())
    assert_same_scores(booster, tiny)


@pytest.mark.parametrize("max_cat_to_onehot", [4, 64])  # one-vs-rest and many-vs-many (bitset) splits
def test_categorical_splits(data, max_cat_to_onehot):
    rng, x, y = data
    x = x.copy()
    x[:, 4] = rng.integers(0, 40, len(x))
    y = y + 2 * (x[:, 4] % 7 == 0)
    booster = train(x, y, categorical=[4], num_leaves=31, max_cat_to_onehot=max_cat_to_onehot)
    assert NativeBooster.from_booster(booster)._forest.has_categorical
    test = x.copy()
    # unseen, negative, fractional, huge and missing categories
    test[:100, 4] = np.array([np.nan, -3, -0.5, 3.7, 100, 1e10, 39, 40, 63, 64], dtype=np.float32).repeat(10)
    assert_same_scores(booster, test)


def test_linear_tree_leaves(data):
    rng, x, y = data
    booster = train(x, y, num_leaves=15, linear_tree=True)
    assert NativeBooster.from_booster(booster)._forest.has_linear
    assert_same_scores(booster, x)
    # a NaN among a leaf's features falls back to its constant value
    assert_same_scores(booster, with_nans(rng, x, 0.1))


def test_random_forest_average_output(data):
    _, x, y = data
    booster = train(x, y, num_leaves=15, boosting="rf", bagging_fraction=0.5, bagging_freq=1)
    assert NativeBooster.from_booster(booster)._forest.average_output
    assert_same_scores(booster, x)  # raw scores are sums
    assert_same_scores(booster, x, raw_score=False)  # predict() averages


@pytest.mark.parametrize("linear_tree", [False, True])
def test_single_leaf_trees(data, kernel, linear_tree):
    _, x, _ = data
    booster = train(x, np.full(len(x), 2.5), rounds=3, linear_tree=linear_tree)
    assert_same_scores(booster, x)


@pytest.mark.parametrize("linear_tree", [False, True])
def test_selected_rows_and_input_conversion(data, linear_tree):
    _, x, y = data
    native = NativeBooster.from_booster(train(x, y, num_leaves=31, linear_tree=linear_tree))
    rows = np.array([5, 0, 5, 1499])
    np.testing.assert_array_equal(native.predict(x, rows), native.predict(x[rows]))
    np.testing.assert_array_equal(native.predict(x.astype(np.float64)), native.predict(x))
    np.testing.assert_array_equal(native.predict(np.asfortranarray(x)), native.predict(x))
    with pytest.raises(ValueError, match="8 features"):
        native.predict(x[:, :5])
    with pytest.raises(IndexError, match="outside"):
        native.predict(x, np.array([1500]))


def test_multiclass_models_are_refused(data):
    _, x, _ = data
    booster = lightgbm.train({"objective": "multiclass", "num_class": 3, "verbose": -1},
                             lightgbm.Dataset(x, np.arange(len(x)) % 3), num_boost_round=2)
    with pytest.raises(ModelTextError, match="num_class=3"):
        NativeBooster.from_booster(booster)


def test_converted_objectives_need_raw_score(data):
    _, x, y = data
    native = NativeBooster.from_booster(train(x, np.abs(y) + 1, objective="poisson"))
    native.predict(x, raw_score=True)
    with pytest.raises(ValueError, match="poisson"):
        native.predict(x, raw_score=False)


# ---- malformed text: the error says what and on which line ----

@pytest.fixture(scope="module")
def text(data):
    _, x, y = data
    return train(x, y, rounds=3, num_leaves=7).model_to_string()


def line_of(text: str, prefix: str, occurrence: int = 0) -> int:
    return [i for i, line in enumerate(text.splitlines(), 1) if line.startswith(prefix)][occurrence]


def replace_line(text: str, prefix: str, new: str, occurrence: int = 0) -> str:
    lines = text.splitlines()
    lines[line_of(text, prefix, occurrence) - 1] = new
    return "\n".join(lines) + "\n"


def error_of(text) -> str:
    with pytest.raises(_native.ForestError) as info:
        _native.Forest(text)
    return str(info.value)


def test_error_not_a_model():
    assert "expected 'tree'" in error_of("")
    assert "line 1: expected 'tree'" in error_of('{"format": "json"}')


def test_error_bad_number_names_key_and_line(text):
    where = line_of(text, "threshold=", 1)
    bad = replace_line(text, "threshold=", "threshold=0.5 abc 1 2 3 4", 1)
    assert re.search(rf"line {where}: threshold: 'abc' is not a number", error_of(bad))


def test_error_wrong_count(text):
    where = line_of(text, "leaf_value=")
    bad = replace_line(text, "leaf_value=", "leaf_value=1 2 3")
    assert f"line {where}: leaf_value has 3 values, expected 7" in error_of(bad)


def test_error_missing_key(text):
    bad = "\n".join(line for line in text.splitlines() if not line.startswith("right_child=")) + "\n"
    assert f"line {line_of(text, 'Tree=0')}: tree lacks 'right_child'" in error_of(bad)


def test_error_bad_child_and_feature(text):
    bad = replace_line(text, "left_child=", "left_child=1 -1 -2 -3 -4 -77")
    assert "child ~76 is not a leaf of it" in error_of(bad)
    children = [line for line in text.splitlines() if line.startswith("left_child=")][0]
    looped = replace_line(text, "left_child=", "left_child=0" + children[len("left_child=") + 1:])
    assert "is reached twice" in error_of(looped)
    features = replace_line(text, "split_feature=", "split_feature=99 0 0 0 0 0")
    assert f"line {line_of(text, 'split_feature=')}: split_feature 99 is outside 0..7" in error_of(features)


def test_error_truncated(text):
    cut = text[: text.index("Tree=2")] + "Tree=2\nnum_leaves=7\n"
    assert "ends inside Tree=2" in error_of(cut)
    assert "expected Tree=1" in error_of(text.replace("Tree=1", "Tree=5"))


def test_error_bad_decision_type(text):
    bad = replace_line(text, "decision_type=", "decision_type=2 2 2 12 2 2")
    assert "decision_type 12" in error_of(bad)


def test_model_text_error_is_an_itercast_error(text):
    from itercast import ItercastError

    with pytest.raises(ItercastError, match="gap: LightGBM model text, line 1"):
        NativeBooster("nonsense", "gap")


@pytest.mark.parametrize("linear_tree", [False, True])
def test_threads_split_rows_without_changing_scores(data, linear_tree):
    rng, x, y = data
    native = NativeBooster.from_booster(train(x, y, num_leaves=31, linear_tree=linear_tree))
    many = np.repeat(with_nans(rng, x, 0.05), 4, axis=0)  # 6,000 rows: enough to split
    one = native._forest.predict(many, threads=1)
    np.testing.assert_array_equal(native._forest.predict(many, threads=2), one)
    rows = np.arange(len(many))[::-1].copy()
    np.testing.assert_array_equal(native._forest.predict(many, rows, threads=3), one[rows])


@pytest.mark.parametrize("linear_tree", [False, True])
@pytest.mark.parametrize("num_leaves", [2, 33, 64, 65, 200])  # bit sets up to 64 leaves, tree walks beyond
def test_every_tree_size(data, num_leaves, linear_tree):
    rng, x, y = data
    big = np.repeat(x, 3, axis=0) + rng.normal(scale=0.01, size=(3 * len(x), x.shape[1])).astype(np.float32)
    booster = train(big, np.repeat(y, 3), rounds=5, num_leaves=num_leaves, min_data_in_leaf=2, linear_tree=linear_tree)
    assert NativeBooster.from_booster(booster)._forest.has_linear == linear_tree
    assert_same_scores(booster, big[:1001])
    assert_same_scores(booster, with_nans(rng, big[:1001], 0.01))


@pytest.fixture(params=["auto", "portable"])
def kernel(request):
    """Each bit-set kernel in turn: AVX-512 (where the CPU has it) and the portable one."""
    _native.forest_kernel(request.param)
    yield _native.forest_kernel()
    _native.forest_kernel("auto")


def test_forest_kernel_names_what_scores():
    assert _native.forest_kernel() in ("avx512", "portable")
    try:
        assert _native.forest_kernel("portable") == "portable"
    finally:
        _native.forest_kernel("auto")
    with pytest.raises(ValueError, match="'auto' or 'portable'"):
        _native.forest_kernel("fast")


@pytest.mark.parametrize("linear_tree", [False, True])  # linear leaves: the kernels say which leaf each row reached
@pytest.mark.parametrize("num_leaves", [2, 31, 32, 33, 63, 64])  # one or both halves of the leaf sets
@pytest.mark.parametrize("rows", [1, 15, 17, 63, 64, 65, 130, 1001])  # whole and partial row groups
def test_bit_set_kernels_score_as_lightgbm(data, kernel, num_leaves, rows, linear_tree):
    rng, x, y = data
    big = np.repeat(x, 3, axis=0) + rng.normal(scale=0.01, size=(3 * len(x), x.shape[1])).astype(np.float32)
    # features 5 and 6 unused (constant in training): a NaN there changes no score, fast path or not
    big[:, 5:7] = 0
    booster = train(big, np.repeat(y, 3), rounds=8, num_leaves=num_leaves, min_data_in_leaf=2, linear_tree=linear_tree)
    test = big[:rows].copy()
    assert_same_scores(booster, test)
    test[:, 5] = np.nan
    assert_same_scores(booster, test)
    assert_same_scores(booster, with_nans(rng, big[:rows], 0.02))


@pytest.mark.parametrize("linear_tree", [False, True])
def test_the_kernels_agree_bit_for_bit(data, linear_tree):
    rng, x, y = data
    native = NativeBooster.from_booster(train(x, y, rounds=20, num_leaves=63, min_data_in_leaf=2,
                                              linear_tree=linear_tree))
    try:
        _native.forest_kernel("portable")
        portable = native.predict(x)
    finally:
        _native.forest_kernel("auto")
    np.testing.assert_array_equal(native.predict(x), portable)


@pytest.mark.parametrize("num_leaves", [15, 63, 80])  # bit-set kernels (<= 64 leaves) and the fast walk
@pytest.mark.parametrize("rows", [1, 17, 64, 130])
def test_linear_bounds_clamp_what_linear_leaves_read(data, kernel, num_leaves, rows):
    """With the training range as bounds (which holds every split's threshold), linear leaves score as
    LightGBM does on rows clipped to it, on every path."""
    rng, x, y = data
    booster = train(x, y, rounds=10, num_leaves=num_leaves, min_data_in_leaf=2, linear_tree=True)
    native = NativeBooster.from_booster(booster)
    assert native.linear_bounds is None
    low, high = x.min(axis=0), x.max(axis=0)
    native.set_linear_bounds(low, high)
    assert native.linear_bounds == (low.tolist(), high.tolist())
    wide = (3 * rng.normal(size=(rows, x.shape[1]))).astype(np.float32)
    for test in (wide, with_nans(rng, wide, 0.05)):  # NaN: the general walk
        expected = booster.predict(np.clip(test, low.astype(np.float32), high.astype(np.float32)), raw_score=True)
        np.testing.assert_allclose(native.predict(test), expected, rtol=1e-9, atol=1e-9)
    far = 10 * x[:50]  # beyond the range: unbounded, the leaves' slopes go on
    assert not np.allclose(NativeBooster.from_booster(booster).predict(far), native.predict(far))


def test_linear_bounds_are_checked(data):
    _, x, y = data
    booster = NativeBooster.from_booster(train(x, y, rounds=3, linear_tree=True), "duration")
    n = booster.num_features
    with pytest.raises(ValueError, match=f"duration: linear bounds: 2 low and {n} high values for {n} features"):
        booster.set_linear_bounds([0.0, 0.0], [1.0] * n)
    with pytest.raises(ValueError, match="feature 1 has low 2.000000 > high 1.000000"):
        booster.set_linear_bounds([0.0, 2.0] + [0.0] * (n - 2), [1.0] * n)
    assert booster.linear_bounds is None
