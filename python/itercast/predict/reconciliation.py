"""From op times to the step a job sees: the reconciliation of profiled op times with un-profiled steps,
the iteration's time outside its ops (head/tail) and the calibration of the result.

An op model predicts the iteration time *as profiled*. A per-hardware linear reconciliation, learned
from the collection's two labels, maps it to the time the job sees without a profiler attached:
unprofiled_ms = a * durations_ms + b * (gaps + head/tail)_ms + c * ops. A calibration learnt from
held-out predictions of the training set corrects what that leaves with the iteration's op count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from itercast.predict.rows import CONTEXT_FEATURES

# The floor of un-profiled / profiled predictions for model files before version 7: the share of the
# largest profiler inflation seen on a collection (15x, docs/collect.md).
DEFAULT_MIN_SHARE = 1 / 15


@dataclass
class Reconciliation:
    """unprofiled_ms = scale * durations_ms + gap_scale * rest_ms + per_op_ms * ops, fitted to the least mean
    relative error. ``durations_ms`` is the iteration's summed op durations; ``rest_ms`` its gaps between
    ops and its head/tail, the time outside ops (framework and Python).

    The profiler slows the two unalike: it records an event around every op, and that bookkeeping lands
    between the ops, so the gaps shrink by far more than the durations when the profiler is off. One
    scale for both (``gap_scale`` = ``scale``) is what model files of version 2 and models that predict a
    single op time have; two are more accurate (docs/decisions.md).

    ``ops`` counts every op the profiler recorded (nested ones too): its overhead is per recorded
    event, and a top-level count misses that a convolution records four ops where an add records one.

    Relative, because plain least squares is ruled by the longest steps: on the
    CPU collection it doubled the error of small configurations (by-architecture
    MRE 25% against 11% from the measured profiled times). Absolute rather than
    squared relative error, because squares let one odd configuration rule the
    fit: a profiler run 15x slower than the un-profiled steps (seen on the CPU
    collection) pulled the scale of every other prediction down with it.

    ``min_share``: the smallest un-profiled / profiled step ratio in training (1 / the profiler's largest
    inflation). The per-op term is negative, so a trace of many more ops than training had, each
    predicted short (an unseen vocabulary), reconciles to a negative time: 1,217 ops of a GPU trace
    under a small CPU model came to -2.5 ms. No prediction falls below this share of the profiled one
    (:meth:`floor`). It is taken over every training trace, those the op models do not learn from
    (:func:`explained_by_reconciliation`) included: on the CPU collection it is 0.40, and held-out
    predictions by architecture stay above 0.48 of their profiled predictions, so it never binds there.
    The default, for model files before version 7, is the share of the largest inflation seen on a
    collection (15x, docs/collect.md).
    """

    scale: float = 1.0
    per_op_ms: float = 0.0
    gap_scale: float = 1.0
    min_share: float = DEFAULT_MIN_SHARE

    @classmethod
    def fit(cls, durations_ms: np.ndarray, rest_ms: np.ndarray, ops: np.ndarray, unprofiled_ms: np.ndarray,
            separate_gaps: bool = True) -> "Reconciliation":
        """``separate_gaps=False``: one scale for durations and the rest alike (for models whose op
        times do not come as durations and gaps)."""
        unprofiled_ms = np.asarray(unprofiled_ms, dtype=float)
        durations_ms, rest_ms = np.asarray(durations_ms, dtype=float), np.asarray(rest_ms, dtype=float)
        times = [durations_ms, rest_ms] if separate_gaps else [durations_ms + rest_ms]
        design = np.stack([*times, ops], axis=1) / unprofiled_ms[:, None]
        # A profiler adds time per op and slows the ops: scales > 0, per_op <= 0. Unbounded, a few
        # configurations whose profiled time and op count rise together can fit a negative scale.
        bounds = ([1e-3] * len(times) + [-np.inf], [np.inf] * len(times) + [0.0])
        *scales, per_op = least_absolute_deviations(design, np.ones(len(unprofiled_ms)), bounds)
        min_share = float(np.min(unprofiled_ms / (durations_ms + rest_ms)))
        return cls(float(scales[0]), float(per_op), float(scales[-1]), min_share)

    def apply(self, durations_ms, rest_ms, ops):
        return (self.scale * np.asarray(durations_ms) + self.gap_scale * np.asarray(rest_ms)
                + self.per_op_ms * np.asarray(ops))

    def floor(self, unprofiled_ms, profiled_ms) -> np.ndarray:
        """``unprofiled_ms``, at least ``min_share`` of ``profiled_ms``."""
        return np.maximum(np.asarray(unprofiled_ms), self.min_share * np.asarray(profiled_ms))


def least_absolute_deviations(design: np.ndarray, target: np.ndarray, bounds=(-np.inf, np.inf),
                              rounds: int = 100) -> np.ndarray:
    """argmin_b sum |design @ b - target| within ``bounds`` (as scipy's lsq_linear takes them),
    by iteratively reweighted least squares from the L2 solution."""
    from scipy.optimize import lsq_linear

    coefficients = lsq_linear(design, target, bounds=bounds).x
    for _ in range(rounds):
        weights = 1.0 / np.sqrt(np.maximum(np.abs(design @ coefficients - target), 1e-6))
        updated = lsq_linear(design * weights[:, None], target * weights, bounds=bounds).x
        if np.allclose(updated, coefficients, rtol=1e-9, atol=0):
            return updated
        coefficients = updated
    return coefficients


@dataclass
class HeadTail:
    """An iteration's time outside its first and last op, from its structure:
    ``log(ms) = b . [1, iteration context, log(1 + ops)]``, fitted to the least absolute deviation.

    That time is Python between the ops (zero_grad before the forward, the optimizer's bookkeeping
    after its last op), so it grows with the model's parameters and work. It is up to 3% of a
    profiled step (90th percentile); the training median in its place cost the measured-op-time
    oracle 1.1 points of MRE by architecture (4.7% against 3.6% with the true head/tail; 3.8% with this).
    """

    coefficients: list[float]

    @staticmethod
    def design(contexts: np.ndarray, op_counts) -> np.ndarray:
        """One row per iteration: [1, its rows.CONTEXT_FEATURES, log(1 + its ops)]."""
        contexts = np.asarray(contexts, dtype=np.float64).reshape(-1, len(CONTEXT_FEATURES))
        return np.column_stack([np.ones(len(contexts)), contexts, np.log1p(np.asarray(op_counts, dtype=np.float64))])

    @classmethod
    def fit(cls, design: np.ndarray, head_tail_ns) -> "HeadTail":
        log_ms = np.log(np.maximum(np.asarray(head_tail_ns) / 1e6, 1e-3))  # 1 us floor: no log(0)
        return cls([float(b) for b in least_absolute_deviations(design, log_ms)])

    def predict_ns(self, design: np.ndarray) -> np.ndarray:
        return np.exp(design @ np.asarray(self.coefficients)) * 1e6


@dataclass
class Calibration:
    """unprofiled_ms = reconciled_ms * exp(a + b * log(ops)), ``coefficients`` = [a, b], fitted to the least
    absolute deviation of the log on predictions of training samples made by models that did not see their
    architecture (:func:`fit_calibration`). ``ops`` counts every op the profiler recorded, as the
    Reconciliation's does.

    The reconciliation is fitted on measured op times, but applied to predicted ones, and a model's
    predictions for an architecture it has not seen lean towards the training set's typical op: by
    architecture it over-predicts iterations of few ops, under-predicts those of many, and predicts gaps
    short throughout. Fitted on the training set's own (in-sample) predictions the correction is about
    half as large as on held-out ones, which are what a new trace gets (docs/decisions.md).
    """

    coefficients: list[float] = field(default_factory=lambda: [0.0, 0.0])

    @staticmethod
    def log_ops(ops) -> np.ndarray:
        return np.log(np.maximum(np.asarray(ops, dtype=np.float64), 1.0))

    @classmethod
    def fit(cls, predicted_ms, ops, unprofiled_ms) -> "Calibration":
        """Fitted on the samples with a positive prediction (a weak model's reconciled time can be <= 0:
        the per-op term is negative); the identity when fewer than four have one."""
        predicted_ms = np.asarray(predicted_ms, dtype=np.float64)
        unprofiled_ms = np.asarray(unprofiled_ms, dtype=np.float64)
        usable = (predicted_ms > 0) & (unprofiled_ms > 0) & np.isfinite(predicted_ms)
        if usable.sum() < 4:
            return cls()
        log_ratio = np.log(unprofiled_ms[usable] / predicted_ms[usable])
        log_ops = cls.log_ops(ops)[usable]
        design = np.column_stack([np.ones(len(log_ops)), log_ops])
        return cls([float(b) for b in least_absolute_deviations(design, log_ratio)])

    def apply(self, predicted_ms, ops) -> np.ndarray:
        a, b = self.coefficients
        return np.asarray(predicted_ms) * np.exp(a + b * self.log_ops(ops))


# A training trace whose profiled run took this much more (or less) than the reconciliation makes of its
# measured op times is left out of the op models' training (see explained_by_reconciliation).
MAX_UNEXPLAINED = 0.3


def explained_by_reconciliation(reconciliation: Reconciliation, durations_ms, rest_ms, ops, unprofiled_ms,
                                max_unexplained: float = MAX_UNEXPLAINED) -> np.ndarray:
    """Which samples' measured op times the reconciliation maps to within ``max_unexplained`` (relative) of
    their un-profiled step.

    The profiler's cost is per recorded op and in the gaps, and the reconciliation accounts for that; but
    some profiled runs are slower through and through: on the 2-core CPU VM the largest transformer
    configurations (batch 32, mostly 64 tokens) ran their profiled steps at 1.7-2.6x their un-profiled ones
    in a long collection (bert_384 at 64 tokens 1.92x; 1.02x in a fresh worker), gpt_small's elementwise ops
    7-40x slower than at half the tokens: a memory regime of the worker process, not the ops' cost. Learnt
    from, those op times taught the duration model that large ops of a held-out architecture cost double.
    Never more than half the samples are left out: a reconciliation that explains so few is no judge of them.
    """
    unprofiled_ms = np.asarray(unprofiled_ms, dtype=float)
    relative = np.abs(reconciliation.apply(durations_ms, rest_ms, ops) / unprofiled_ms - 1)
    explained = relative <= max_unexplained
    return explained if explained.sum() * 2 >= len(explained) else np.ones(len(explained), dtype=bool)
