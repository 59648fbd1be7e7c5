"""Model rows from windows: the native builder against a plain reading of what a row holds, and the
shortcuts taken for one iteration's windows in order against the general path."""

import numpy as np
import pytest

from itercast import _native
from itercast.features import Windows
from itercast.predict import rows as R


def iteration_windows(ops: int, width: int, stride: int, seed: int = 0) -> Windows:
    """One iteration's windows as featurisation lays them out: starts 0, stride, ..., the last the first to reach
    the end; each op's block (is_op, features) the same in every window holding it, padding all zero."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(ops, R.F)).astype(np.float32)
    features[:, R.CLASS_COLUMNS] = 0
    features[np.arange(ops), rng.choice(R.CLASS_COLUMNS, ops)] = 1
    features[:, R.LOG_NESTED_OPS] = np.log1p(rng.integers(0, 5, ops)).astype(np.float32)
    starts = [0]
    while starts[-1] + width < ops:
        starts.append(starts[-1] + stride)
    x = np.zeros((len(starts), width * (R.F + 1) + R.AGGREGATES), dtype=np.float32)
    y = np.zeros((len(starts), width, 2))
    index = np.zeros((len(starts), 3), dtype=np.int64)
    for k, start in enumerate(starts):
        count = min(width, ops - start)
        index[k] = (7, start, count)
        blocks = x[k, : width * (R.F + 1)].reshape(width, R.F + 1)
        blocks[:count, 0] = 1
        blocks[:count, 1:] = features[start: start + count]
        x[k, width * (R.F + 1):] = rng.normal(size=R.AGGREGATES)
        y[k, :count] = rng.random((count, 2))
    return Windows(x, y, y.sum(axis=(1, 2)), index, width, stride)


def general(monkeypatch, function, *args):
    """``function`` as for windows that are not one iteration's in order (sorting and gathering)."""
    with monkeypatch.context() as patch:
        patch.setattr(R, "in_order", lambda windows: False)
        return function(*args)


@pytest.mark.parametrize("width,stride", [(12, 3), (12, 1), (12, 12), (5, 2), (4, 3), (1, 1)])
@pytest.mark.parametrize("ops", [1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 40, 101])
def test_shortcuts_equal_the_general_path(monkeypatch, ops, width, stride):
    windows = iteration_windows(ops, width, stride, seed=ops)
    assert R.in_order(windows)
    window, position = R.central_pair_per_op(windows)
    expected = general(monkeypatch, R.central_pair_per_op, windows)
    np.testing.assert_array_equal(window, expected[0])
    np.testing.assert_array_equal(position, expected[1])
    assert np.array_equal(windows.index[window, 1] + position, np.arange(ops))  # each op once, in order
    rows = R.window_rows(windows, (window, position))
    assert rows.tobytes() == general(monkeypatch, R.window_rows, windows, (window, position)).tobytes()
    assert rows.tobytes() == reference_rows(windows, window, position).tobytes()
    assert R.recorded_ops(windows) == general(monkeypatch, R.recorded_ops, windows)
    np.testing.assert_array_equal(R.iteration_context(windows), general(monkeypatch, R.iteration_context, windows))


def reference_rows(windows: Windows, window: np.ndarray, position: np.ndarray) -> np.ndarray:
    """What a row holds, read plainly: the op's features, its window's aggregates, the (is_op, class index,
    log FLOPs, log bytes) of the ops before and after it in the window (zeros past the window's edges),
    position, the window's ops, position / ops, then the iteration's context."""
    blocks = R.window_blocks(windows)
    count = windows.index[window, 2]

    def view(at: np.ndarray, inside: np.ndarray) -> np.ndarray:
        block = blocks[window, np.clip(at, 0, windows.width - 1)]
        classes = block[:, 1:][:, R.CLASS_COLUMNS]
        hot = np.where(classes.any(axis=1), np.argmax(classes, axis=1), 0)
        seen = np.stack([block[:, 0], hot, block[:, 1 + R.LOG_FLOPS], block[:, 1 + R.LOG_BYTES]], axis=1)
        return np.where(inside[:, None], seen, 0)

    aggregates = windows.x[window, windows.width * (R.F + 1):][:, : R.AGGREGATES]
    columns = [blocks[window, position, 1:], aggregates, view(position - 1, position > 0),
               view(position + 1, position + 1 < count), position[:, None], count[:, None],
               (position / np.maximum(count, 1))[:, None],
               np.tile(R.iteration_context(windows), (len(window), 1))]
    return np.concatenate([np.asarray(c, dtype=np.float32) for c in columns], axis=1)


@pytest.mark.parametrize("pairs", ["all", "random"])
def test_rows_of_any_pairs_hold_what_a_row_holds(pairs):
    windows = iteration_windows(101, 12, 3, seed=3)
    window, position = R.all_pairs(windows)
    if pairs == "random":
        pick = np.random.default_rng(0).choice(len(window), 60)
        window, position = window[pick], position[pick]
    rows = R.window_rows(windows, (window, position))
    assert rows.shape == (len(window), R.COLUMNS)
    assert rows.tobytes() == reference_rows(windows, window, position).tobytes()


def test_the_op_class_columns_are_one_run():
    """The native row builder reads an op's class one-hot as columns class_begin..class_end."""
    assert R.CLASS_COLUMNS == list(range(R.CLASS_COLUMNS[0], R.CLASS_COLUMNS[-1] + 1))


def test_pairs_outside_the_windows_are_refused_by_name():
    windows = iteration_windows(40, 12, 3)
    last, held = len(windows) - 1, int(windows.index[-1, 2])
    assert (last, held) == (10, 10)
    for window, position, says in [(11, 0, "window 11 outside 0..11"), (-1, 0, "window -1 outside"),
                                   (last, held, "position 10 of window 10, which holds 10 ops"),
                                   (0, -1, "position -1")]:
        with pytest.raises(ValueError, match=f"pair 1: {says}"):
            R.window_rows(windows, (np.array([0, window]), np.array([0, position])))
    narrow = Windows(windows.x[:, :100], windows.y, windows.y_sum, windows.index, 12, 3)
    with pytest.raises(ValueError, match="window rows of 100 floats; the layout reads"):
        R.window_rows(narrow, (np.array([0]), np.array([0])))


def test_central_pairs_refuse_windows_out_of_order():
    from itercast import _native

    windows = iteration_windows(40, 12, 3)
    assert _native.windows_in_order(windows.index, 12, 3)
    shifted, short, other, far = (windows.index.copy() for _ in range(4))
    shifted[2, 1] += 1
    short[2, 2] -= 1  # a window before the last that is not full
    other[3, 0] += 1  # another iteration's window
    far[-1, 1] = 10**15  # a stray last start: refused, not taken for the op count
    for index in (shifted, short, other, far):
        assert not _native.windows_in_order(index, 12, 3)
        with pytest.raises(ValueError, match="not one iteration's in order"):
            _native.central_pairs(index, 12, 3)
    assert not _native.windows_in_order(windows.index, 12, 13)  # stride > width
    assert not _native.windows_in_order(np.zeros((0, 3), dtype=np.int64), 12, 3)
    assert [len(a) for a in _native.central_pairs(np.zeros((0, 3), dtype=np.int64), 12, 3)] == [0, 0]


def test_op_sums_of_several_predictions_at_once_equal_one_at_a_time():
    samples = [windows_sample(iteration_windows(40, 12, 3)), windows_sample(iteration_windows(25, 12, 3, seed=4))]
    for pairs in (R.central_pair_per_op, R.all_pairs):
        rows = R.rows_of(samples, pairs)
        both = np.stack([rows.duration, rows.gap])
        sums = R.op_sums(rows, both, 2)
        assert sums.shape == (2, 2)
        np.testing.assert_array_equal(sums[0], R.op_sums(rows, rows.duration, 2))
        np.testing.assert_array_equal(sums[1], R.op_sums(rows, rows.gap, 2))


def test_other_windows_take_the_general_path():
    windows = iteration_windows(40, 12, 3)
    backwards = Windows(windows.x[::-1], windows.y[::-1], windows.y_sum[::-1], windows.index[::-1], 12, 3)
    assert not R.in_order(backwards)
    window, position = R.central_pair_per_op(backwards)
    assert np.array_equal(np.sort(backwards.index[window, 1] + position), np.arange(40))
    two = Windows.concatenate([windows, iteration_windows(40, 12, 3, seed=1)])
    two.index[len(windows):, 0] = 8
    assert not R.in_order(two)


def test_op_sums_of_one_row_per_op_is_a_plain_sum():
    windows = iteration_windows(40, 12, 3)
    rows = R.rows_of([windows_sample(windows)] * 2, R.central_pair_per_op)
    predicted = np.random.default_rng(0).random(len(rows.x))
    sums = R.op_sums(rows, predicted, 2)
    np.testing.assert_allclose(sums, [predicted[:40].sum(), predicted[40:].sum()], rtol=1e-12)
    every = R.rows_of([windows_sample(windows)], R.all_pairs)
    per_window = np.arange(len(every.x), dtype=float)
    op = every.op
    expected = sum(per_window[op == i].mean() for i in range(40))
    np.testing.assert_allclose(R.op_sums(every, per_window, 1), [expected], rtol=1e-12)


def windows_sample(windows):
    from itercast.predict.dataset import TraceSample

    return TraceSample(None, windows, 40, 0.0, 0.0)


def test_every_row_carries_its_iterations_totals():
    """The context columns: log(1 + sum) of the iteration's op bytes, FLOPs and optimizer-phase bytes."""
    windows = iteration_windows(40, 12, 3)
    blocks = R.window_blocks(windows)
    ops = np.concatenate([blocks[:-1, :3].reshape(-1, R.F + 1), blocks[-1, : windows.index[-1, 2]]])[:, 1:]
    ops = ops.astype(np.float64)
    op_bytes, op_flops = np.expm1(ops[:, R.LOG_BYTES]), np.expm1(ops[:, R.LOG_FLOPS])
    optimizer = ops[:, R.OPTIMIZER_PHASE] > 0.5
    assert 0 < optimizer.sum() < len(ops)
    expected = np.log1p(np.maximum([op_bytes.sum(), op_flops.sum(), op_bytes[optimizer].sum()], 0))
    np.testing.assert_allclose(R.iteration_context(windows), expected, rtol=1e-6)
    other = iteration_windows(40, 12, 3, seed=5)
    rows = R.rows_of([windows_sample(windows), windows_sample(other)], R.central_pair_per_op)
    context = rows.x[:, -len(R.CONTEXT_FEATURES):]
    np.testing.assert_array_equal(context[:40], np.tile(R.iteration_context(windows), (40, 1)))
    np.testing.assert_array_equal(context[40:], np.tile(R.iteration_context(other), (40, 1)))
    assert not np.array_equal(context[0], context[40])
    assert rows.x.shape[1] == R.COLUMNS == len(R.row_columns(list(windows.columns) or [""] * windows.x.shape[1], 12))


def test_rows_to_predict_leave_the_labels_out_and_nothing_else():
    windows = iteration_windows(40, 12, 3)
    samples = [windows_sample(windows), windows_sample(iteration_windows(40, 12, 3, seed=2))]
    for count in (1, 2):
        labelled = R.rows_of(samples[:count], R.central_pair_per_op)
        bare = R.rows_of(samples[:count], R.central_pair_per_op, labels=False)
        assert bare.duration is None and bare.gap is None
        assert bare.x.tobytes() == labelled.x.tobytes()
        np.testing.assert_array_equal(bare.op, labelled.op)
        np.testing.assert_array_equal(bare.sample, labelled.sample)


def test_a_neighbours_class_is_the_index_of_its_hot_class_column():
    windows = iteration_windows(40, 12, 3)
    rows = R.rows_of([windows_sample(windows)], R.central_pair_per_op)
    own_class = np.argmax(rows.x[:, R.CLASS_COLUMNS], axis=1)
    previous_class = R.F + R.AGGREGATES + R.NEIGHBOUR_FEATURES.index("class")
    np.testing.assert_array_equal(rows.x[1:, previous_class], own_class[:-1])


# ---- the layout is the native schema's ----

LAYOUT_CONSTANTS = ("F", "CLASS_COLUMNS", "LOG_FLOPS", "LOG_BYTES", "LOG_NESTED_OPS", "OPTIMIZER_PHASE",
                    "AGGREGATES", "NEIGHBOUR_FEATURES", "POSITION_COLUMNS", "CONTEXT_FEATURES", "COLUMNS")


def test_row_layout_constants_are_read_from_the_native_module():
    import ast
    import inspect

    assigned = {target.id: node.value for node in ast.parse(inspect.getsource(R)).body
                if isinstance(node, ast.Assign) for target in node.targets if isinstance(target, ast.Name)}
    literals = [name for name in LAYOUT_CONSTANTS if any(isinstance(n, ast.Constant) and not isinstance(n.value, str)
                                                         for n in ast.walk(assigned[name]))]
    assert literals == []
    layout = _native.row_layout()
    assert (R.F, R.AGGREGATES, R.COLUMNS) == (layout.op_features, layout.aggregates, layout.columns)


def test_the_native_row_layout_finds_its_columns_by_name():
    names = R.OP_FEATURES
    assert [names[i] for i in R.CLASS_COLUMNS] == [name for name in names if name.startswith("class=")]
    assert [names[i] for i in (R.LOG_FLOPS, R.LOG_BYTES, R.LOG_NESTED_OPS, R.OPTIMIZER_PHASE)] == [
        "log_flops", "log_bytes", "log_nested_ops", "phase=optimizer"]
    window_columns = _native.Timeline(width=4, stride=2).window_columns()
    assert R.AGGREGATES == sum(column.startswith("agg.") for column in window_columns)
    assert len(R.row_columns(window_columns, 4)) == R.COLUMNS


def test_the_feature_schema_version_is_the_native_modules():
    from itercast.timeline import FEATURE_SCHEMA_VERSION

    assert FEATURE_SCHEMA_VERSION == _native.FEATURE_SCHEMA_VERSION > 0
