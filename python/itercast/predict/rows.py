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

from itercast import _native
from itercast.features import Windows
from itercast.timeline import FEATURE_COLUMNS

# Where a row's parts sit, as the native feature schema lays them out (csrc/predict/schema_row_layout.cpp).
_LAYOUT = _native.row_layout()
OP_FEATURES = [name for name, _ in FEATURE_COLUMNS]
F = _LAYOUT.op_features
# Column indices of op features that other modules read (the op block starts each row).
CLASS_COLUMNS = list(range(_LAYOUT.class_begin, _LAYOUT.class_end))
LOG_FLOPS = _LAYOUT.log_flops
LOG_BYTES = _LAYOUT.log_bytes
LOG_NESTED_OPS = _LAYOUT.log_nested_ops
OPTIMIZER_PHASE = _LAYOUT.optimizer_phase
AGGREGATES = _LAYOUT.aggregates
NEIGHBOUR_FEATURES = _LAYOUT.neighbour_features
POSITION_COLUMNS = _LAYOUT.position_columns
# The same in every row of an iteration: log(1 + sum) over its ops of their bytes, their FLOPs, and the
# bytes of its optimizer-phase ops (parameters and their state). On a CPU an op's time depends on what
# else the iteration keeps in cache, which no 12-op window shows. Why these three and not other
# totals: docs/decisions.md.
CONTEXT_FEATURES = _LAYOUT.context_columns
COLUMNS = _LAYOUT.columns


def row_columns(window_columns: list[str], width: int) -> list[str]:
    aggregates = window_columns[width * (F + 1): width * (F + 1) + AGGREGATES]
    neighbours = [f"{side}.{name}" for side in ("prev", "next") for name in NEIGHBOUR_FEATURES]
    return OP_FEATURES + aggregates + neighbours + list(POSITION_COLUMNS) + list(CONTEXT_FEATURES)


# A row's two labels, in the order the op models predict them (Rows.duration, Rows.gap).
LABELS = ("duration", "gap")


@dataclass
class Rows:
    x: np.ndarray  # (rows, columns) float32
    duration: np.ndarray | None  # (rows,) ns, from the window labels; None in rows built to predict
    gap: np.ndarray | None
    op: np.ndarray  # (rows,) op position in its iteration
    sample: np.ndarray  # (rows,) which TraceSample the row came from


def window_blocks(windows: Windows) -> np.ndarray:
    """(windows, width, F + 1) float32: each window's per-position blocks [is_op, F op features], a view."""
    return windows.x[:, : windows.width * (F + 1)].reshape(len(windows), windows.width, F + 1)


def in_order(windows: Windows) -> bool:
    """Whether these are one iteration's windows in order, starting at 0, stride, 2 stride, ..., every
    window but the last full.

    As featurisation makes them (a :class:`TraceSample`, or one iteration in prediction).
    """
    return _native.windows_in_order(windows.index, windows.width, windows.stride)


def window_rows(windows: Windows, pairs: tuple[np.ndarray, np.ndarray], context: np.ndarray | None = None) -> np.ndarray:
    """Feature rows for the given (window, position) pairs, built natively (csrc/predict/op_rows):
    at one row per op this is a good part of prediction time. ``context``: the windows'
    :func:`iteration_context`, if the caller has it."""
    if context is None:
        context = iteration_context(windows)
    return _native.op_rows(windows.x, windows.index, windows.width, *_int64(pairs), _LAYOUT, context)


def _int64(pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in pairs)


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
        return _native.central_pairs(windows.index, windows.width, windows.stride)
    window, position = all_pairs(windows)
    op = windows.index[window, 1] + position
    off_centre = np.abs(2 * position - (windows.index[window, 2] - 1))
    order = np.lexsort((window, off_centre, op))
    first = np.ones(len(order), dtype=bool)
    first[1:] = op[order][1:] != op[order][:-1]
    keep = order[first]
    return window[keep], position[keep]


def rows_of(samples, pairs_of, labels: bool = True) -> Rows:
    """Stacks the rows of many samples; ``pairs_of(windows)`` picks the (window, position) pairs.

    ``labels=False`` (prediction) leaves the window labels out: ``duration`` and ``gap`` are None.
    """
    xs, durations, gaps, ops, owners = [], [], [], [], []
    for index, sample in enumerate(samples):
        windows = sample.windows
        window, position = pairs_of(windows)
        xs.append(window_rows(windows, (window, position), sample.totals[0]))
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


def recorded_ops(windows: Windows) -> float:
    """Ops the profiler recorded in these windows' iteration: each op and the framework ops nested in it."""
    return iteration_totals(windows)[1]


def iteration_context(windows: Windows) -> np.ndarray:
    """The CONTEXT_FEATURES of these windows' iteration (float32)."""
    return iteration_totals(windows)[0]


def iteration_totals(windows: Windows) -> tuple[np.ndarray, float]:
    """(:func:`iteration_context`, :func:`recorded_ops`), natively from each op of the iteration once."""
    return _native.iteration_totals(windows.x, windows.index, windows.width, *_int64(central_pair_per_op(windows)),
                                    _LAYOUT)


def op_sums(rows: Rows, predicted: np.ndarray, samples: int) -> np.ndarray:
    """Per sample: predictions averaged over each op's covering windows, summed over its ops.

    ``predicted``: one value per row, or (k, rows) for k predictions at once (then (k, samples)).
    """
    stacked = np.atleast_2d(predicted)
    key = rows.sample.astype(np.int64) << 32 | rows.op.astype(np.int64)
    if len(key) and bool((key[1:] > key[:-1]).all()):  # each op once (central rows): nothing to average
        sums = [np.bincount(rows.sample, weights=p, minlength=samples) for p in stacked]
    else:
        unique, inverse = np.unique(key, return_inverse=True)
        counts, owner = np.bincount(inverse), (unique >> 32).astype(np.int64)
        sums = [np.bincount(owner, weights=np.bincount(inverse, weights=p) / counts, minlength=samples)
                for p in stacked]
    return np.stack(sums) if np.ndim(predicted) == 2 else sums[0]


def per_op(rows: Rows, predicted: np.ndarray, samples: int) -> list[np.ndarray]:
    """Per sample: (ops, k) predictions of each op, averaged over its covering windows, in op order.

    ``predicted``: (k, rows), k predictions of every row."""
    stacked = np.atleast_2d(predicted)
    key = rows.sample.astype(np.int64) << 32 | rows.op.astype(np.int64)
    if len(key) and bool((key[1:] > key[:-1]).all()):  # each op once, in order (central rows): no averaging
        means, owner = stacked.T, rows.sample.astype(np.int64)
    else:
        unique, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse)
        means = np.stack([np.bincount(inverse, weights=p) / counts for p in stacked], axis=1)
        owner = (unique >> 32).astype(np.int64)
    bounds = np.searchsorted(owner, np.arange(samples + 1))
    return [means[bounds[k]:bounds[k + 1]] for k in range(samples)]
