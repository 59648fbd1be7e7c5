"""A prior for op durations that scales with an op's work, for the trees to correct.

Gradient-boosted trees predict within the range of the labels they were trained
on: an architecture whose ops are larger than any in training (a 512-wide LSTM
after 256-wide ones, a 4096-wide MLP's weight gradients) gets at most the
largest training duration. So the duration booster learns a correction on top
of this prior, which extrapolates: per (op class, phase),

    duration_us = fixed + per_flop * FLOPs + per_byte * bytes

with non-negative coefficients fitted on relative error (small ops count as
much as large ones). Groups with too few training ops get no prior (zero).

An op's bytes are at least the bytes it outputs (``bytes_from_output``): the
trace gives no operands for some autograd nodes, so their bytes column is 0
although they write a whole tensor (EmbeddingBagBackward's dense gradient of
the table), and their prior stayed at the group's constant however large the
table. What counting output bytes bought: docs/decisions.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from itercast import _native
from itercast.predict.rows import CLASS_COLUMNS, LOG_BYTES, LOG_FLOPS, OP_FEATURES

LOG_OUTPUT_BYTES = OP_FEATURES.index("log_output_bytes")

_PHASE_COLUMNS = [OP_FEATURES.index(f"phase={phase}") for phase in ("forward", "backward", "optimizer")]
GROUPS = len(CLASS_COLUMNS) * len(_PHASE_COLUMNS)
MIN_OPS_PER_GROUP = 10


def _one_run(indices: list[int]) -> tuple[int, int]:
    """(begin, end) of columns that lie in one run (the schema lays the one-hots out so)."""
    if indices != list(range(indices[0], indices[-1] + 1)):
        raise ValueError(f"one-hot columns {indices} are not contiguous")
    return indices[0], indices[-1] + 1


_TERM_COLUMNS = (*_one_run(CLASS_COLUMNS), *_one_run(_PHASE_COLUMNS), LOG_FLOPS, LOG_BYTES)


def terms(x: np.ndarray, bytes_from_output: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, FLOPs, bytes) of each row's op, natively: the (op class, phase) group from the rows'
    one-hots (rows start with the op's own features), and the FLOPs and bytes of its log columns;
    with ``bytes_from_output``, bytes at least the op's output bytes."""
    return _native.roofline_terms(np.ascontiguousarray(x, dtype=np.float32), *_TERM_COLUMNS,
                                  LOG_OUTPUT_BYTES if bytes_from_output else None)


def _work(flops: np.ndarray, bytes_: np.ndarray) -> np.ndarray:
    """(rows, 3): 1, FLOPs and bytes of each row's op."""
    return np.stack([np.ones(len(flops)), flops, bytes_], axis=1)


@dataclass
class Roofline:
    coefficients: np.ndarray  # (GROUPS, 3): µs, µs per FLOP, µs per byte
    bytes_from_output: bool = True  # False in model files of version 3 and before

    @classmethod
    def fit(cls, x: np.ndarray, duration_ns: np.ndarray, bytes_from_output: bool = True) -> "Roofline":
        from scipy.optimize import nnls

        us = np.asarray(duration_ns, dtype=np.float64) / 1e3
        groups, flops, bytes_ = terms(x, bytes_from_output)
        design = _work(flops, bytes_)
        coefficients = np.zeros((GROUPS, 3))
        for group in range(GROUPS):
            rows = (groups == group) & (us > 0)
            if rows.sum() < MIN_OPS_PER_GROUP:
                continue
            relative = design[rows] / us[rows, None]  # each row's error relative to its label
            scale = np.maximum(relative.max(axis=0), 1e-300)  # FLOPs (1e12) next to the constant (1)
            solution, _ = nnls(relative / scale, np.ones(rows.sum()))
            coefficients[group] = solution / scale
        return cls(coefficients, bytes_from_output)

    def predict_ns(self, x: np.ndarray) -> np.ndarray:
        group, flops, bytes_ = terms(x, self.bytes_from_output)
        c = self.coefficients[group]
        return (c[:, 0] + flops * c[:, 1] + bytes_ * c[:, 2]) * 1e3  # _work(...) . c, without the stack

    def to_list(self) -> list[list[float]]:
        return self.coefficients.tolist()

    @classmethod
    def from_list(cls, values, bytes_from_output: bool = True) -> "Roofline":
        coefficients = np.asarray(values, dtype=np.float64)
        if coefficients.shape != (GROUPS, 3):
            raise ValueError(f"roofline coefficients of shape {coefficients.shape}, expected {(GROUPS, 3)}")
        return cls(coefficients, bytes_from_output)
