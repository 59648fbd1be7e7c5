"""One target hardware's model: its window model, head/tail, reconciliation and calibration, fitted together."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import numpy as np

from itercast.predict.dataset import TraceSample, measured_op_parts
from itercast.predict.reconciliation import (MAX_UNEXPLAINED, Calibration, HeadTail, Reconciliation,
                                             explained_by_reconciliation)
from itercast.predict.window_model import WindowModel


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

    def predict_samples(self, samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
        """(profiled_ms, unprofiled_ms) per sample."""
        profiled_ms, reconciled_ms, recorded_ops = self.predict_parts(samples)
        return profiled_ms, self.reconciliation.floor(self.calibration.apply(reconciled_ms, recorded_ops), profiled_ms)

    def predict_parts(self, samples: list[TraceSample], window_model=None):
        """(profiled_ms, reconciled_ms, recorded ops) per sample, from ``window_model`` (this model's by
        default) and this model's head/tail and reconciliation, before the calibration."""
        head_tail_design, recorded_ops = iteration_terms(samples)
        durations_ns, gaps_ns = (self.window_model if window_model is None else window_model).predict_op_parts(samples)
        rest_ms = (gaps_ns + self.head_tail.predict_ns(head_tail_design)) / 1e6
        profiled_ms = durations_ns / 1e6 + rest_ms
        return profiled_ms, self.reconciliation.apply(durations_ns / 1e6, rest_ms, recorded_ops), recorded_ops


def iteration_terms(samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: its HeadTail design row and the ops the profiler recorded, from one pass over its ops."""
    totals = [s.totals for s in samples]
    design = HeadTail.design([context for context, _ in totals], [s.op_count for s in samples])
    return design, np.array([recorded for _, recorded in totals])


# Groups of training architectures the calibration's held-out predictions come from (fit_calibration).
CALIBRATION_FOLDS = 2


def fit_hardware_model(hardware: str, samples: list[TraceSample], window_model: WindowModel,
                       client=None, max_unexplained: float | None = MAX_UNEXPLAINED,
                       calibration_folds: int | None = None) -> HardwareModel:
    """Fits the window model, head/tail and reconciliation on the samples whose profiled run the
    reconciliation explains (all of them when ``max_unexplained`` is None), then with
    ``calibration_folds`` a Calibration (:func:`fit_calibration`)."""
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
    model = HardwareModel(hardware, window_model, head_tail, reconciliation, vocabulary, summary)
    if calibration_folds:
        model.calibration = fit_calibration(model, kept, template, calibration_folds, client)
    summary["calibration_folds"] = calibration_folds if model.calibration.coefficients != [0.0, 0.0] else None
    summary["train_seconds"] = round(time.perf_counter() - start, 2)
    return model


def fit_calibration(model: HardwareModel, samples: list[TraceSample], template, folds: int,
                    client=None) -> Calibration:
    """A Calibration fitted on held-out predictions of ``samples``: their architectures (zoo models) in
    ``folds`` groups, each group predicted by a copy of the unfitted ``template`` window model trained on
    the others, with ``model``'s head/tail and reconciliation. With fewer than two architectures a group,
    the identity (no correction)."""
    architectures = sorted({s.config.model for s in samples})
    if len(architectures) < 2 * folds:
        return Calibration()
    order = np.random.default_rng(getattr(template, "seed", 0)).permutation(architectures)
    fold_of = {architecture: k % folds for k, architecture in enumerate(order)}
    fold = np.array([fold_of[s.config.model] for s in samples])
    predicted_ms, ops = np.zeros(len(samples)), np.zeros(len(samples))
    for k in range(folds):
        held_out = np.flatnonzero(fold == k)
        inner = copy.deepcopy(template).fit([s for s, f in zip(samples, fold) if f != k], client=client)
        _, predicted_ms[held_out], ops[held_out] = model.predict_parts([samples[i] for i in held_out], inner)
    return Calibration.fit(predicted_ms, ops, [s.config.step_ms for s in samples])
