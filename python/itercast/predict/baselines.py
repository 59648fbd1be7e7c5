"""Baselines the window models must beat; same interface as WindowLGBM.

- :class:`OpBased`: ETS's "OpBased": each op from its own features only, no window context.
- :class:`FlopsBytesLinear`: the iteration's summed FLOPs, bytes and op count, least squares.
- :class:`TrainingMedian`: the training set's median op time, whatever the trace.
- :class:`TraceTime`: the trace's own profiled step, scaled by the training set's median ratio of un-profiled
  to profiled steps (reads the test trace's times: a baseline for traces taken on the target hardware).
"""

from __future__ import annotations

import time

import numpy as np

from itercast.predict.dataset import measured_op_parts
from itercast.predict.lgbm import DEFAULT_PARAMS, DEFAULT_ROUNDS, from_target, to_target
from itercast.predict.rows import F, LOG_BYTES, LOG_FLOPS, one_pair_per_op, op_sums, rows_of
from itercast.predict.window_model import SummedOpTime


def each_op_once(samples):
    """Rows with every op exactly once (an op's own features are the same in every window)."""
    rng = np.random.default_rng(0)
    return rows_of(samples, lambda windows: one_pair_per_op(windows, rng))


def measured_op_time(samples) -> np.ndarray:
    """Per sample: the trace's summed op duration + gap, ns (what every model here predicts)."""
    durations, gaps = measured_op_parts(samples)
    return durations + gaps


class OpBased(SummedOpTime):
    """LightGBM on each op's own F features (no neighbours, no window aggregates), summed."""

    name = "opbased"

    def __init__(self, rounds: int = DEFAULT_ROUNDS, seed: int = 0):
        self.rounds = rounds
        self.params = {**DEFAULT_PARAMS, "seed": seed, "objective": "regression"}
        self.booster = None

    def fit(self, samples, client=None) -> "OpBased":
        import lightgbm

        rows = each_op_once(samples)
        data = lightgbm.Dataset(rows.x[:, :F], to_target(rows.duration + rows.gap, "log"))
        self.booster = lightgbm.train(self.params, data, num_boost_round=self.rounds)
        return self

    def predict_op_time(self, samples) -> np.ndarray:
        rows = each_op_once(samples)
        return op_sums(rows, from_target(self.booster.predict(rows.x[:, :F]), "log"), len(samples))


def iteration_totals(samples) -> np.ndarray:
    """(samples, 3): summed FLOPs, summed input bytes and op count of each iteration."""
    rows = each_op_once(samples)
    flops = op_sums(rows, np.expm1(rows.x[:, LOG_FLOPS].astype(np.float64)), len(samples))
    bytes_ = op_sums(rows, np.expm1(rows.x[:, LOG_BYTES].astype(np.float64)), len(samples))
    ops = np.array([s.op_count for s in samples], dtype=float)
    return np.stack([flops, bytes_, ops], axis=1)


class FlopsBytesLinear(SummedOpTime):
    """op time = a * FLOPs + b * bytes + c * ops, non-negative least squares on training iterations."""

    name = "linear"

    def __init__(self):
        self.coefficients: np.ndarray | None = None
        self.column_scale: np.ndarray | None = None

    def fit(self, samples, client=None) -> "FlopsBytesLinear":
        from scipy.optimize import nnls

        design = iteration_totals(samples)
        self.column_scale = np.maximum(design.max(axis=0), 1.0)  # conditions FLOPs (~1e12) next to ops (~1e3)
        self.coefficients, _ = nnls(design / self.column_scale, measured_op_time(samples))
        return self

    def predict_op_time(self, samples) -> np.ndarray:
        return (iteration_totals(samples) / self.column_scale) @ self.coefficients


class TrainingMedian(SummedOpTime):
    """The median training iteration's op time, for every trace."""

    name = "median"

    def __init__(self):
        self.median_ns = 0.0

    def fit(self, samples, client=None) -> "TrainingMedian":
        self.median_ns = float(np.median(measured_op_time(samples)))
        return self

    def predict_op_time(self, samples) -> np.ndarray:
        return np.full(len(samples), self.median_ns)


class MeasuredOpTime:
    """Diagnostic, not a model: the test trace's own measured op time.

    Its errors are the floor the rest of the pipeline (head/tail median,
    reconciliation to step_ms) leaves even for a perfect op-time model.
    """

    name = "oracle"
    separates_gaps = True

    def fit(self, samples, client=None) -> "MeasuredOpTime":
        return self

    def predict_op_time(self, samples) -> np.ndarray:
        return measured_op_time(samples)

    def predict_op_parts(self, samples) -> tuple[np.ndarray, np.ndarray]:
        return measured_op_parts(samples)


class TraceTime:
    """The step time the trace measured, times the training set's median un-profiled / profiled ratio.

    Iteration-level: no op model and no reconciliation, so it has ``predict_samples`` as a fitted
    HardwareModel has. Only meaningful for a trace taken on the hardware it predicts for.
    """

    name = "trace-time"

    def __init__(self):
        self.ratio = 1.0
        self.summary: dict = {}

    def fit(self, samples, client=None) -> "TraceTime":
        start = time.perf_counter()
        self.ratio = float(np.median([s.config.step_ms / (s.profiled_ns / 1e6) for s in samples]))
        self.summary = {"train_seconds": time.perf_counter() - start, "ratio": self.ratio}
        return self

    def predict_samples(self, samples) -> tuple[np.ndarray, np.ndarray]:
        profiled_ms = np.array([s.profiled_ns / 1e6 for s in samples])
        return profiled_ms, profiled_ms * self.ratio
