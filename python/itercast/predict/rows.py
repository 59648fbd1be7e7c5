"""From windows to model rows and back: one row per (window, position) of an op.

A row holds the op's own feature block, the window's aggregates, its position
in the window, a compact view of its neighbours and its iteration's context
(the whole iteration's bytes, FLOPs and optimizer bytes). A model predicts each
op's duration and gap once per window covering it; predictions are averaged
per op and summed over the iteration, as ETS combines windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from itercast.features import Windows
from itercast.timeline import FEATURE_COLUMNS

OP_FEATURES = [name for name, _ in FEATURE_COLUMNS]
F = len(OP_FEATURES)
# Column indices of op features that other modules read (the op block starts each row).
CLASS_COLUMNS = [i for i, name in enumerate(OP_FEATURES) if name.startswith("class=")]
LOG_FLOPS = OP_FEATURES.index("log_flops")
LOG_BYTES = OP_FEATURES.index("log_bytes")
LOG_NESTED_OPS = OP_FEATURES.index("log_nested_ops")
OPTIMIZER_PHASE = OP_FEATURES.index("phase=optimizer")
AGGREGATES = 24
NEIGHBOUR_FEATURES = ("is_op", "class", "log_flops", "log_bytes")
# The same in every row of an iteration: log(1 + sum) over its ops of their bytes, their FLOPs, and the
# bytes of its optimizer-phase ops (parameters and their state). On a CPU an op's time depends on what
# else the iteration keeps in cache, which no 12-op window shows: by architecture (five folds, 429
# configurations) these three took MRE from 15.1% to 13.1%; adding the op count or the largest op did
# worse (benchmarks/RESULTS.md, "Iteration context and a head/tail model").
CONTEXT_FEATURES = ("iteration.log_bytes", "iteration.log_flops", "iteration.log_optimizer_bytes")
_CONTEXT_INPUTS = [LOG_BYTES, LOG_FLOPS, OPTIMIZER_PHASE]  # the op features they are summed from


def row_columns(window_columns: list[str], width: int) -> list[str]:
    aggregates = window_columns[width * (F + 1): width * (F + 1) + AGGREGATES]
    neighbours = [f"{side}.{name}" for side in ("prev", "next") for name in NEIGHBOUR_FEATURES]
    return (OP_FEATURES + aggregates + neighbours + ["position", "window_ops", "relative_position"]
            + list(CONTEXT_FEATURES))


@dataclass
class Rows:
    x: np.ndarray  # (rows, columns) float32
    duration: np.ndarray | None  # (rows,) ns, from the window labels; None in rows built to predict
    gap: np.ndarray | None
    op: np.ndarray  # (rows,) op position in its iteration
    sample: np.ndarray  # (rows,) which TraceSample the row came from


# One slice when the class one-hot columns are contiguous (they are): argmax reads it without a copy.
_CLASS_SLICE = (slice(CLASS_COLUMNS[0], CLASS_COLUMNS[-1] + 1)
                if CLASS_COLUMNS == list(range(CLASS_COLUMNS[0], CLASS_COLUMNS[-1] + 1)) else CLASS_COLUMNS)
COLUMNS = F + AGGREGATES + 2 * len(NEIGHBOUR_FEATURES) + 3 + len(CONTEXT_FEATURES)


def hot_index(one_hot: np.ndarray) -> np.ndarray:
    """The index of each one-hot row's hot column (0 for an all-zero padding block), as float32.

    A dot product: a fifth of the time of argmax over strided columns, in every prediction.
    """
    return one_hot @ np.arange(one_hot.shape[-1], dtype=np.float32)


def _compact(blocks: np.ndarray) -> np.ndarray:
    """(windows, width, 4): each slot's neighbour view (is_op, class, log_flops, log_bytes)."""
    out = np.empty(blocks.shape[:2] + (len(NEIGHBOUR_FEATURES),), dtype=np.float32)
    out[..., 0] = blocks[..., 0]
    out[..., 1] = hot_index(blocks[..., 1:][..., _CLASS_SLICE])
    out[..., 2] = blocks[..., 1 + LOG_FLOPS]
    out[..., 3] = blocks[..., 1 + LOG_BYTES]
    return out


def _compact_ops(ops: np.ndarray) -> np.ndarray:
    """(ops, 4): the neighbour view of op feature rows, as :func:`_compact` gives it for an op's slot."""
    out = np.empty((len(ops), len(NEIGHBOUR_FEATURES)), dtype=np.float32)
    out[:, 0] = 1
    out[:, 1] = hot_index(ops[:, _CLASS_SLICE])
    out[:, 2] = ops[:, LOG_FLOPS]
    out[:, 3] = ops[:, LOG_BYTES]
    return out


def window_blocks(windows: Windows) -> np.ndarray:
    """(windows, width, F + 1) float32: each window's per-position blocks [is_op, F op features], a view."""
    return windows.x[:, : windows.width * (F + 1)].reshape(len(windows), windows.width, F + 1)


def _each_op_once(windows: Windows, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For windows :func:`in_order`, every op's block exactly once, in op order, as two views: the
    first ``stride`` slots of each window but the last, then the last window's ops."""
    return blocks[:-1, : windows.stride], blocks[-1, : windows.index[-1, 2]]


def in_order(windows: Windows) -> bool:
    """Whether these are one iteration's windows in order, starting at 0, stride, 2 stride, ...

    As featurisation makes them (a :class:`TraceSample`, or one iteration in prediction).
    """
    index = windows.index
    return (len(index) > 0 and bool((index[:, 0] == index[0, 0]).all())
            and np.array_equal(index[:, 1], np.arange(len(index)) * windows.stride))


def window_rows(windows: Windows, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Feature rows for the given (window, position) pairs.

    Written into one preallocated array: at ~4 rows per op this is a good part of
    prediction time, and neighbours are read from a compact per-slot view rather
    than from whole gathered feature blocks. When the pairs hold each op of one
    iteration once, in order (:func:`central_pair_per_op`), a row's neighbours are
    the ops of the rows before and after it, and the view is built from the rows
    themselves (the same values, for a quarter of the work).
    """
    window, position = pairs
    width = windows.width
    blocks = window_blocks(windows)
    count = windows.index[window, 2]
    out = np.empty((len(window), COLUMNS), dtype=np.float32)
    op = windows.index[window, 1] + position
    each_op_in_order = in_order(windows) and np.array_equal(op, np.arange(len(op)))
    if each_op_in_order:
        # an op's block is the same in every window: ops from the first stride slots of each
        # window, the rest from the last window (strided copies, no gather)
        head, tail = _each_op_once(windows, blocks)
        before_last = (len(windows) - 1) * windows.stride
        # (a view of out's rows, window by window: one copy, no temporary)
        out[:before_last].reshape(len(windows) - 1, windows.stride, COLUMNS)[:, :, :F] = head[..., 1:]
        out[before_last:, :F] = tail[:, 1:]
    else:
        out[:, :F] = blocks[window, position, 1:]
    at = F + AGGREGATES
    out[:, F:at] = windows.x[window, width * (F + 1): width * (F + 1) + AGGREGATES]
    k = len(NEIGHBOUR_FEATURES)
    if each_op_in_order:
        own = _compact_ops(out[:, :F])
        out[1:, at: at + k] = own[:-1]
        out[:-1, at + k: at + 2 * k] = own[1:]
        # the first op's previous and the last op's next are at window edges: zeroed below
        out[:1, at: at + k] = 0
        out[-1:, at + k: at + 2 * k] = 0
    else:
        compact = _compact(blocks)
        out[:, at: at + k] = compact[window, np.maximum(position - 1, 0)]
        out[:, at + k: at + 2 * k] = compact[window, np.minimum(position + 1, width - 1)]
    out[position <= 0, at: at + k] = 0
    at += k
    out[position + 1 >= count, at: at + k] = 0
    at += k
    out[:, at] = position
    out[:, at + 1] = count
    out[:, at + 2] = position / np.maximum(count, 1)
    # the own-op blocks hold each op once when in order: the context is read from them, not gathered again
    out[:, at + 3:] = _context(out[:, _CONTEXT_INPUTS]) if each_op_in_order else iteration_context(windows)
    return out


def all_pairs(windows: Windows) -> tuple[np.ndarray, np.ndarray]:
    """Every (window, position) holding an op."""
    return np.nonzero(windows.mask)


def one_pair_per_op(windows: Windows, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each op once, in one of the windows covering it picked at random (4x fewer rows at stride 3)."""
    window, position = all_pairs(windows)
    op = windows.index[window, 1] + position
    order = np.lexsort((rng.random(len(op)), op))
    first = np.ones(len(order), dtype=bool)
    first[1:] = op[order][1:] != op[order][:-1]
    keep = order[first]
    return window[keep], position[keep]


def central_pair_per_op(windows: Windows) -> tuple[np.ndarray, np.ndarray]:
    """Each op once, in the covering window where it sits nearest the middle (the earlier window on a tie).

    A quarter of the rows of :func:`all_pairs` at stride 3, for prediction; the middle
    of a window is that of its ops, (count - 1) / 2, so short last windows count too.
    Pairs come in op order.
    """
    if in_order(windows):
        return _central_in_order(windows)
    window, position = all_pairs(windows)
    op = windows.index[window, 1] + position
    off_centre = np.abs(2 * position - (windows.index[window, 2] - 1))
    order = np.lexsort((window, off_centre, op))
    first = np.ones(len(order), dtype=bool)
    first[1:] = op[order][1:] != op[order][:-1]
    keep = order[first]
    return window[keep], position[keep]


def _central_in_order(windows: Windows) -> tuple[np.ndarray, np.ndarray]:
    """:func:`central_pair_per_op` for one iteration's windows in order (:func:`in_order`), without sorting.

    Every window but the last is full (the last is the first to reach the iteration's end), and
    op i sits |2 (i - k stride) - (width - 1)| off the middle of full window k: V-shaped in k, so
    the nearest full window is the nearest k to the middle, clamped to those covering i (the
    earlier on a tie). The last window wins only where strictly nearer.
    """
    stride, width, last = windows.stride, windows.width, len(windows) - 1
    ops = int(windows.index[-1, 1] + windows.index[-1, 2])
    op = np.arange(ops)
    twice = 2 * op - (width - 1)  # twice the op's offset from a window's middle when the window starts at 0
    k = -((stride - twice) // (2 * stride))  # ceil((twice - stride) / (2 stride)): nearest, earlier on a tie
    lowest = np.maximum(0, -((width - 1 - op) // stride))  # ceil((i - width + 1) / stride)
    highest = np.minimum(last - 1, op // stride)
    k = np.minimum(np.maximum(k, lowest), highest)
    full = lowest <= highest  # some full window covers the op
    off_full = np.abs(twice - 2 * stride * k)
    position_last = op - last * stride
    off_last = np.abs(2 * position_last - (windows.index[-1, 2] - 1))
    use_last = (position_last >= 0) & (~full | (off_last < off_full))
    window = np.where(use_last, last, k)
    return window, op - window * stride


def rows_of(samples, pairs_of, labels: bool = True) -> Rows:
    """Stacks the rows of many samples; ``pairs_of(windows)`` picks the (window, position) pairs.

    ``labels=False`` (prediction) leaves the window labels out: ``duration`` and ``gap`` are None.
    """
    xs, durations, gaps, ops, owners = [], [], [], [], []
    for index, sample in enumerate(samples):
        windows = sample.windows
        window, position = pairs_of(windows)
        xs.append(window_rows(windows, (window, position)))
        if labels:
            durations.append(windows.y[window, position, 0])
            gaps.append(windows.y[window, position, 1])
        ops.append(windows.index[window, 1] + position)
        owners.append(np.full(len(window), index))
    x = xs[0] if len(xs) == 1 else np.vstack(xs)  # one sample (online prediction): no 3 MB copy
    ops, owners = (ops[0], owners[0]) if len(xs) == 1 else (np.concatenate(ops), np.concatenate(owners))
    if not labels:
        return Rows(x, None, None, ops, owners)
    return Rows(x, np.concatenate(durations), np.concatenate(gaps), ops, owners)


def op_features_once(windows: Windows, features: list[int]) -> np.ndarray:
    """(ops, len(features)) float32: these op features (indices into OP_FEATURES) of each op of these
    windows' iteration, once."""
    columns = [1 + feature for feature in features]
    if in_order(windows):
        head, tail = _each_op_once(windows, window_blocks(windows))
        own = np.concatenate([head[..., columns].reshape(-1, len(columns)), tail[:, columns]])
    else:
        window, position = central_pair_per_op(windows)  # each op once
        own = window_blocks(windows)[window, position][:, columns]
    return own


def recorded_ops(windows: Windows) -> float:
    """Ops the profiler recorded in these windows' iteration: each op and the framework ops nested in it."""
    return _recorded(op_features_once(windows, [LOG_NESTED_OPS])[:, 0])


def iteration_context(windows: Windows) -> np.ndarray:
    """The CONTEXT_FEATURES of these windows' iteration (float32)."""
    return _context(op_features_once(windows, _CONTEXT_INPUTS))


def iteration_totals(windows: Windows) -> tuple[np.ndarray, float]:
    """(:func:`iteration_context`, :func:`recorded_ops`) from one gather of the iteration's ops."""
    ops = op_features_once(windows, _CONTEXT_INPUTS + [LOG_NESTED_OPS])
    return _context(ops[:, : len(_CONTEXT_INPUTS)]), _recorded(ops[:, len(_CONTEXT_INPUTS)])


def _recorded(log_nested_ops: np.ndarray) -> float:
    return float(np.sum(1.0 + np.rint(np.expm1(log_nested_ops.astype(np.float64)))))  # counts, stored as float32 logs


def _context(ops: np.ndarray) -> np.ndarray:
    """CONTEXT_FEATURES from each op's _CONTEXT_INPUTS, once per op."""
    log_bytes, log_flops, optimizer = ops.astype(np.float64).T
    op_bytes = np.expm1(log_bytes)
    totals = [op_bytes.sum(), np.expm1(log_flops).sum(), op_bytes[optimizer > 0.5].sum()]
    return np.log1p(np.maximum(totals, 0.0)).astype(np.float32)  # >= 0 from real features; not from random ones


def op_sums(rows: Rows, predicted: np.ndarray, samples: int) -> np.ndarray:
    """Per sample: predictions averaged over each op's covering windows, summed over its ops."""
    key = rows.sample.astype(np.int64) << 32 | rows.op.astype(np.int64)
    if len(key) and bool((key[1:] > key[:-1]).all()):  # each op once (central rows): nothing to average
        return np.bincount(rows.sample, weights=predicted, minlength=samples)
    unique, inverse = np.unique(key, return_inverse=True)
    per_op = np.bincount(inverse, weights=predicted) / np.bincount(inverse)
    return np.bincount((unique >> 32).astype(np.int64), weights=per_op, minlength=samples)
