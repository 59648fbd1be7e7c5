"""One target hardware's model: its window model, head/tail, reconciliation and calibration, fitted together."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import numpy as np

from itercast.predict.dataset import TraceSample, measured_op_parts
from itercast.predict.hybrid import OpRegimes, OpTimes, op_times
from itercast.predict.reconciliation import (MAX_UNEXPLAINED, Calibration, HeadTail, Reconciliation,
                                             explained_by_reconciliation)
from itercast.predict.window_model import WindowModel

# The hybrid pricing's weight on the trace's all-measured estimate (geometric blend) where it cannot be
# fitted on held-out predictions (no calibration folds, or a model file from before it was kept): the
# weight fitted on the CPU zoo (docs/predictor.md, item 7).
ANCHOR_WEIGHT = 0.95
# The intervals' entry for the ops the model had not seen: quantiles of log(measured / predicted) of their
# summed time in the held-out predictions, which widen a structure-only interval by their share.
UNSEEN_OPS = "unseen_ops"
MIN_UNSEEN_SAMPLES = 5  # held-out predictions with unseen ops it takes to fit those quantiles
# The weights and slopes fit_anchor chooses from (HardwareModel.anchor_weights).
ANCHOR_WEIGHTS = np.linspace(0.0, 1.0, 21)
ANCHOR_SLOPES = (-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0)
# The prediction interval: these quantiles of held-out log errors (an 80% interval).
INTERVAL_QUANTILES = (0.1, 0.9)


@dataclass
class Priced:
    """Per sample, a pricing's predictions and what they rest on."""

    mode: str  # "structure" or "hybrid"
    profiled_ms: np.ndarray
    unprofiled_ms: np.ndarray
    measured_share: np.ndarray  # of the op time, priced from the trace's measured times
    unseen_share: np.ndarray  # of the op time, resting on ops the model has not seen (types or sizes)
    low_ms: np.ndarray  # the prediction interval (INTERVAL_QUANTILES of held-out errors)
    high_ms: np.ndarray
    # hybrid: the trace's all-measured estimate's un-profiled share of its profiled time (anchor_weights)
    anchor_share: np.ndarray | None = None


@dataclass
class HardwareModel:
    """Everything needed to predict for one target hardware."""

    hardware: str
    window_model: WindowModel
    head_tail: HeadTail
    reconciliation: Reconciliation
    vocabulary: set[str]
    summary: dict = field(default_factory=dict)
    calibration: Calibration = field(default_factory=Calibration)
    regimes: OpRegimes | None = None  # None: every size of the vocabulary's names counts as seen
    anchor_weight: float = ANCHOR_WEIGHT
    anchor_slope: float = 0.0  # anchor_weights
    # mode -> [low, high] quantiles of held-out log(measured / predicted); none: no interval
    intervals: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self):
        if self.regimes is None:
            self.regimes = OpRegimes.names_only(self.vocabulary)

    def predict_samples(self, samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
        """(profiled_ms, unprofiled_ms) per sample, from structure alone."""
        profiled_ms, reconciled_ms, recorded_ops = self.predict_parts(samples)
        return profiled_ms, self.reconciliation.floor(self.calibration.apply(reconciled_ms, recorded_ops), profiled_ms)

    def op_times(self, samples: list[TraceSample], window_model=None, regimes: OpRegimes | None = None) -> OpTimes:
        """The samples' predicted and measured op times, all and unseen (by ``regimes``, this model's by
        default), from ``window_model`` (this model's by default)."""
        window_model = self.window_model if window_model is None else window_model
        return op_times(samples, window_model.predict_each_op(samples), regimes or self.regimes)

    def price(self, samples: list[TraceSample], mode: str = "structure", times: OpTimes | None = None,
              calibration: Calibration | None = None) -> Priced:
        """Predictions priced by ``mode``: "structure" as :meth:`predict_samples`; "hybrid" with the ops
        the model has not seen priced from their measured times in the trace, the calibration applied to
        the structurally priced share only, and the result blended with the trace's all-measured estimate
        (``anchor_weight``, geometric). ``times``: :meth:`op_times`, if the caller has them."""
        times = self.op_times(samples) if times is None else times
        calibration = self.calibration if calibration is None else calibration
        terms = iteration_terms(samples)
        recorded_ops = terms[1]
        profiled_ms, reconciled_ms, _ = self.reconciled(samples, times.parts(mode), terms)
        measured_share = times.unseen_share("hybrid") if mode == "hybrid" else np.zeros(len(samples))
        factor = 1 + (1 - measured_share) * (calibration.apply(1.0, recorded_ops) - 1)
        unprofiled_ms = self.reconciliation.floor(reconciled_ms * factor, profiled_ms)
        anchor_share = None
        if mode == "hybrid":
            anchor_profiled_ms, anchor_ms, _ = self.reconciled(samples, times.parts("measured"), terms)
            anchor_ms = self.reconciliation.floor(anchor_ms, anchor_profiled_ms)
            anchor_share = anchor_ms / anchor_profiled_ms
            w = anchor_weights(self.anchor_weight, self.anchor_slope, anchor_share)
            unprofiled_ms = np.exp((1 - w) * np.log(unprofiled_ms) + w * np.log(anchor_ms))
            measured_share = measured_share + w * (1 - measured_share)
        unseen_share = times.unseen_share(mode)
        low, high = self.intervals.get(mode, (0.0, 0.0))
        low_ms, high_ms = unprofiled_ms * np.exp(low), unprofiled_ms * np.exp(high)
        if mode == "structure" and UNSEEN_OPS in self.intervals:
            # the unseen ops' share of the time is only as good as the model's guesses for unseen ops were
            unseen_low, unseen_high = np.exp(self.intervals[UNSEEN_OPS])
            low_ms = low_ms * np.minimum(1.0, 1 - unseen_share + unseen_share * unseen_low)
            high_ms = high_ms * np.maximum(1.0, 1 - unseen_share + unseen_share * unseen_high)
        return Priced(mode, profiled_ms, unprofiled_ms, measured_share, unseen_share, low_ms, high_ms, anchor_share)

    def predict_parts(self, samples: list[TraceSample], window_model=None):
        """(profiled_ms, reconciled_ms, recorded ops) per sample, from ``window_model`` (this model's by
        default) and this model's head/tail and reconciliation, before the calibration."""
        durations_ns, gaps_ns = (self.window_model if window_model is None else window_model).predict_op_parts(samples)
        return self.reconciled(samples, np.stack([durations_ns, gaps_ns], axis=1))

    def reconciled(self, samples: list[TraceSample], parts: np.ndarray, terms=None):
        """(profiled_ms, reconciled_ms, recorded ops) per sample from its summed op (durations, gaps) in ns,
        ``parts`` (samples, 2): the head/tail added, mapped to the un-profiled step before the calibration.
        ``terms``: the samples' :func:`iteration_terms`, if the caller has them."""
        head_tail_design, recorded_ops = iteration_terms(samples) if terms is None else terms
        durations_ms = parts[:, 0] / 1e6
        rest_ms = (parts[:, 1] + self.head_tail.predict_ns(head_tail_design)) / 1e6
        return (durations_ms + rest_ms, self.reconciliation.apply(durations_ms, rest_ms, recorded_ops),
                recorded_ops)


def anchor_weights(weight: float, slope: float, unprofiled_share) -> np.ndarray:
    """The hybrid's weight on the trace's all-measured estimate for each sample, given that estimate's
    un-profiled share of its profiled time: ``weight``, moved by ``slope`` per unit of the share the profiler
    took (a trace the profiler slowed much measured its ops less faithfully)."""
    return np.clip(weight + slope * (1 - np.asarray(unprofiled_share)), 0.0, 1.0)


def iteration_terms(samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: its HeadTail design row and the ops the profiler recorded, from one pass over its ops."""
    totals = [s.totals for s in samples]
    design = HeadTail.design([context for context, _ in totals], [s.op_count for s in samples])
    return design, np.array([recorded for _, recorded in totals])


# Groups of training architectures the calibration's held-out predictions come from (fit_calibration).
CALIBRATION_FOLDS = 2


def fit_hardware_model(hardware: str, samples: list[TraceSample], window_model: WindowModel,
                       client=None, max_unexplained: float | None = MAX_UNEXPLAINED,
                       calibration_folds: int | None = None, anchor_weight: float | None = None) -> HardwareModel:
    """Fits the window model, head/tail and reconciliation on the samples whose profiled run the
    reconciliation explains (all of them when ``max_unexplained`` is None), then with
    ``calibration_folds`` a Calibration, the hybrid's anchor weight (``anchor_weight`` None: fitted,
    else that weight) and the prediction intervals (:func:`fit_calibration`)."""
    start = time.perf_counter()
    template = copy.deepcopy(window_model) if calibration_folds else None  # unfitted, for the inner folds
    unprofiled = np.array([s.config.step_ms for s in samples])
    head_tail_design, recorded_ops = iteration_terms(samples)
    durations_ns, gaps_ns = measured_op_parts(samples)
    durations_ms = durations_ns / 1e6
    rest_ms = (gaps_ns + np.array([s.head_tail_ns for s in samples])) / 1e6
    reconciliation = Reconciliation.fit(durations_ms, rest_ms, recorded_ops, unprofiled,
                                          window_model.separates_gaps)
    keep = np.ones(len(samples), dtype=bool)
    if max_unexplained is not None:
        keep = explained_by_reconciliation(reconciliation, durations_ms, rest_ms, recorded_ops, unprofiled,
                                           max_unexplained)
        if not keep.all():  # the floor stays the whole training set's: the left-out ran the most inflated
            reconciliation = replace(Reconciliation.fit(durations_ms[keep], rest_ms[keep], recorded_ops[keep],
                                                        unprofiled[keep], window_model.separates_gaps),
                                     min_share=reconciliation.min_share)
    kept = [s for s, k in zip(samples, keep) if k]
    window_model.fit(kept, client=client)
    head_tail = HeadTail.fit(head_tail_design[keep], [s.head_tail_ns for s in kept])
    vocabulary = {name for s in kept for name in s.op_names}
    profiled = np.array([s.profiled_ns for s in samples]) / 1e6
    slowdowns = [s.config.slowdown for s in samples]
    summary = {"configs": len(samples), "models": len({s.config.model for s in samples}),
               "families": sorted({s.config.family for s in samples}),
               "ops": int(sum(s.op_count for s in samples)),
               "median_step_ms": float(np.median(unprofiled)),
               "median_profiler_inflation": float(np.median(profiled / unprofiled)),
               "max_unexplained": max_unexplained,
               "unexplained_traces": [s.config.config_id for s, k in zip(samples, keep) if not k],
               # the machine's slowdowns the training times were divided by (Dataset.from_manifest)
               "slowdown_range": [float(min(slowdowns)), float(max(slowdowns))]}
    model = HardwareModel(hardware, window_model, head_tail, reconciliation, vocabulary, summary,
                          regimes=OpRegimes.fit(kept) if hasattr(window_model, "predict_each_op") else None,
                          anchor_weight=ANCHOR_WEIGHT if anchor_weight is None else anchor_weight)
    if calibration_folds:
        model.calibration, model.intervals, fitted = fit_calibration(
            model, kept, template, calibration_folds, client, anchor_weight)
        model.anchor_weight, model.anchor_slope = fitted.anchor_weight, fitted.anchor_slope
    summary["anchor_weight"], summary["anchor_slope"] = model.anchor_weight, model.anchor_slope
    summary["calibration_folds"] = calibration_folds if model.calibration.coefficients != [0.0, 0.0] else None
    summary["train_seconds"] = round(time.perf_counter() - start, 2)
    return model


def fit_calibration(model: HardwareModel, samples: list[TraceSample], template, folds: int,
                    client=None, anchor_weight: float | None = None
                    ) -> tuple[Calibration, dict[str, list[float]], HardwareModel]:
    """(calibration, prediction intervals per pricing mode, ``model`` with the hybrid's anchor weight and
    slope) fitted on held-out predictions of ``samples``: their architectures (zoo models) in ``folds``
    groups, each group predicted by a copy of the unfitted ``template`` window model trained on the others
    (what it did not see judged by those others' op regimes), with ``model``'s head/tail and
    reconciliation. ``anchor_weight``: None fits weight and slope (:func:`fit_anchor`), else that weight
    is kept. With fewer than two architectures a group, the identity calibration, no intervals and the
    weight unfitted."""
    kept = model if anchor_weight is None else replace(model, anchor_weight=anchor_weight)
    architectures = sorted({s.config.model for s in samples})
    if len(architectures) < 2 * folds:
        return Calibration(), {}, kept
    order = np.random.default_rng(getattr(template, "seed", 0)).permutation(architectures)
    fold_of = {architecture: k % folds for k, architecture in enumerate(order)}
    fold = np.array([fold_of[s.config.model] for s in samples])
    predicted_ms, ops = np.zeros(len(samples)), np.zeros(len(samples))
    held_out_times = []
    for k in range(folds):
        held_out = np.flatnonzero(fold == k)
        training = [s for s, f in zip(samples, fold) if f != k]
        inner = copy.deepcopy(template).fit(training, client=client)
        tested = [samples[i] for i in held_out]
        if hasattr(inner, "predict_each_op"):  # per op, so that the hybrid can be priced from the same scores
            times = model.op_times(tested, inner, OpRegimes.fit(training))
            held_out_times.append((held_out, times))
            _, predicted_ms[held_out], ops[held_out] = model.reconciled(tested, times.parts("structure"))
        else:
            _, predicted_ms[held_out], ops[held_out] = model.predict_parts(tested, inner)
    measured_ms = np.array([s.config.step_ms for s in samples])
    calibration = Calibration.fit(predicted_ms, ops, measured_ms)
    if not held_out_times:
        return calibration, {}, kept
    anchor_slope = kept.anchor_slope
    if anchor_weight is None:
        unanchored, _ = held_out_priced(replace(model, anchor_weight=0.0, anchor_slope=0.0), samples,
                                        held_out_times, calibration, "hybrid")
        measured_only, anchor_share = held_out_priced(replace(model, anchor_weight=1.0, anchor_slope=0.0), samples,
                                                      held_out_times, calibration, "hybrid")
        anchor_weight, anchor_slope = fit_anchor(unanchored, measured_only, anchor_share, measured_ms)
    fitted = replace(model, anchor_weight=anchor_weight, anchor_slope=anchor_slope)
    return calibration, fit_intervals(fitted, samples, held_out_times, calibration), fitted


def held_out_priced(model: HardwareModel, samples, held_out_times, calibration: Calibration,
                    mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(un-profiled predictions, anchor shares; NaN outside the hybrid) of every sample, in the samples'
    order, priced by ``mode`` from the op times (:class:`OpTimes`) an inner model that did not train on it
    gave: ``held_out_times`` is [(sample indices, their OpTimes)]."""
    unprofiled, shares = np.zeros(len(samples)), np.full(len(samples), np.nan)
    for held_out, times in held_out_times:
        priced = model.price([samples[i] for i in held_out], mode, times, calibration)
        unprofiled[held_out] = priced.unprofiled_ms
        if priced.anchor_share is not None:
            shares[held_out] = priced.anchor_share
    return unprofiled, shares


def fit_intervals(model: HardwareModel, samples, held_out_times, calibration: Calibration) -> dict[str, list[float]]:
    """Per pricing mode, INTERVAL_QUANTILES of the held-out predictions' log(measured / predicted); and under
    UNSEEN_OPS those of the unseen ops' summed measured / predicted op time, where enough samples had some."""
    measured_ms = np.array([s.config.step_ms for s in samples])
    intervals = {mode: quantiles(np.log(measured_ms / held_out_priced(model, samples, held_out_times,
                                                                      calibration, mode)[0]))
                 for mode in ("structure", "hybrid")}
    unseen = np.concatenate([np.stack([times.measured_unseen.sum(axis=1), times.predicted_unseen.sum(axis=1)], 1)
                             for _, times in held_out_times])
    unseen = unseen[(unseen > 0).all(axis=1)]
    if len(unseen) >= MIN_UNSEEN_SAMPLES:
        intervals[UNSEEN_OPS] = quantiles(np.log(unseen[:, 0] / unseen[:, 1]))
    return intervals


def quantiles(log_errors: np.ndarray) -> list[float]:
    return [float(q) for q in np.quantile(log_errors, INTERVAL_QUANTILES)]


def fit_anchor(unanchored_ms, measured_only_ms, anchor_share, step_ms) -> tuple[float, float]:
    """(weight, slope) of ANCHOR_WEIGHTS x ANCHOR_SLOPES whose blend -- unanchored^(1-w) * measured_only^w
    with w = anchor_weights(weight, slope, anchor_share) -- has the least mean relative error against
    ``step_ms``: how far the trace's own measured times are to be trusted over the structural model, and
    how much less where the profiler slowed the trace more, learnt from predictions of architectures the
    model did not train on. Ties go to the smallest slope magnitude, then the smallest weight."""
    log_unanchored, log_measured = np.log(unanchored_ms), np.log(measured_only_ms)
    best = None
    for slope in sorted(ANCHOR_SLOPES, key=abs):
        for weight in ANCHOR_WEIGHTS:
            w = anchor_weights(weight, slope, anchor_share)
            error = float(np.mean(np.abs(np.exp((1 - w) * log_unanchored + w * log_measured) / step_ms - 1)))
            if best is None or error < best[0] - 1e-12:
                best = (error, float(weight), float(slope))
    return best[1], best[2]
