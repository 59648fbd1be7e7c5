"""The Predictor: fit on a labelled dataset, predict any trace's iteration time, save and load.

One model per target hardware. Each predicts every op's duration and gap
from its window (LightGBM), averages over covering windows and sums: that
is the iteration time *as profiled*. A per-hardware linear reconciliation,
learned from the collection's two labels, maps it to the time the job sees
without a profiler attached: unprofiled_ms = a * durations_ms + b * (gaps +
head/tail)_ms + c * ops. A calibration learnt from held-out predictions of the
training set corrects what that leaves with the iteration's op count.
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from itercast.errors import ItercastError
from itercast.features import DEFAULT_STRIDE, DEFAULT_WIDTH, Windows, timeline_and_windows
from itercast.predict.baselines import measured_op_parts
from itercast.predict.dataset import Dataset, TraceSample, featurise
from itercast.predict.lgbm import DEFAULT_ROUNDS, WindowLGBM, default_label_params
from itercast.predict.rows import CONTEXT_FEATURES
from itercast.timeline import FEATURE_SCHEMA_VERSION, Timeline, canonical_names

MODEL_FORMAT = "itercast-model"
# 2: rows carry the iteration context (rows.CONTEXT_FEATURES), head/tail is a HeadTail model
# 3: the reconciliation scales gaps and head/tail apart from op durations (``gap_scale``)
# 4: the roofline prior's bytes are at least an op's output bytes (``roofline_bytes_from_output``)
# 5: a Calibration of the un-profiled prediction (``calibration``)
# 6: linear leaves read features within their training range (the window model's ``linear_bounds``)
# 7: the un-profiled prediction is at least a share of the profiled one (``Reconciliation.min_share``)
MODEL_VERSION = 7
# A version 2 file reads as version 3 with gap_scale = scale: what it predicted; version 2 and 3 files
# read their priors' bytes as they were fitted, from the bytes column alone; files before version 5
# predict uncalibrated, before version 6 their linear leaves extrapolate without bounds, and before
# version 7 their un-profiled predictions are floored at Reconciliation's default share.
READABLE_VERSIONS = (2, 3, 4, 5, 6, 7)


@dataclass
class Reconciliation:
    """unprofiled_ms = scale * durations_ms + gap_scale * rest_ms + per_op_ms * ops, fitted to the least mean
    relative error. ``durations_ms`` is the iteration's summed op durations; ``rest_ms`` its gaps between
    ops and its head/tail, the time outside ops (framework and Python).

    The profiler slows the two unalike: it records an event around every op, and that bookkeeping lands
    between the ops, so by architecture (five folds, 609 CPU configurations) the gaps scale by ~0.56 and
    the durations by ~0.99. One scale for both (``gap_scale`` = ``scale``, as model files of version 2
    and models that predict a single op time have it) left the measured-op-time oracle at 5.7% MRE
    against 4.5% with two (benchmarks/RESULTS.md).

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
    min_share: float = 1 / 15

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
    architecture (five folds, 651 CPU configurations) it over-predicted iterations of fewer than 300 ops
    by 3.5% on average and under-predicted those of over 4,000 by 2.2%, with gaps predicted 12% under
    their measured sum throughout. Fitted on the training set's own (in-sample) predictions the correction
    is half as large as on held-out ones, which are what a new trace gets (benchmarks/RESULTS.md).
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


@dataclass
class HardwareModel:
    """Everything needed to predict for one target hardware."""

    hardware: str
    window_model: WindowLGBM
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
        durations_ns, gaps_ns = op_time_parts(self.window_model if window_model is None else window_model, samples)
        rest_ms = (gaps_ns + self.head_tail.predict_ns(head_tail_design)) / 1e6
        profiled_ms = durations_ns / 1e6 + rest_ms
        return profiled_ms, self.reconciliation.apply(durations_ns / 1e6, rest_ms, recorded_ops), recorded_ops


def op_time_parts(window_model, samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: (summed op durations, summed gaps) in ns, or (summed op time, 0) from a model that
    predicts only the sum (its reconciliation has one scale for both)."""
    if hasattr(window_model, "predict_op_parts"):
        return window_model.predict_op_parts(samples)
    return window_model.predict_op_time(samples), np.zeros(len(samples))


def iteration_terms(samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: its HeadTail design row and the ops the profiler recorded, from one pass over its ops."""
    totals = [s.totals for s in samples]
    design = HeadTail.design([context for context, _ in totals], [s.op_count for s in samples])
    return design, np.array([recorded for _, recorded in totals])


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


# Groups of training architectures the calibration's held-out predictions come from (fit_calibration).
CALIBRATION_FOLDS = 2


def fit_hardware_model(hardware: str, samples: list[TraceSample], window_model: WindowLGBM,
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
    separate_gaps = hasattr(window_model, "predict_op_parts")
    reconciliation = Reconciliation.fit(durations_ms, rest_ms, recorded_ops, unprofiled, separate_gaps)
    keep = np.ones(len(samples), dtype=bool)
    if max_unexplained is not None:
        keep = explained_by_reconciliation(reconciliation, durations_ms, rest_ms, recorded_ops, unprofiled,
                                           max_unexplained)
        if not keep.all():  # the floor stays the whole training set's: the left-out ran the most inflated
            reconciliation = replace(Reconciliation.fit(durations_ms[keep], rest_ms[keep], recorded_ops[keep],
                                                        unprofiled[keep], separate_gaps),
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


@dataclass
class IterationPrediction:
    name: str
    predicted_ms: float  # without a profiler, on the target hardware
    predicted_profiled_ms: float
    measured_ms: float | None  # the trace's own ProfilerStep duration, if any
    ops: int


@dataclass
class Prediction:
    predicted_ms: float
    hardware: str
    iterations: list[IterationPrediction]
    unseen_fraction: float  # ops whose type never appeared in training
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"predicted_ms": self.predicted_ms, "hardware": self.hardware,
                "unseen_op_fraction": self.unseen_fraction, "seconds": self.seconds,
                "iterations": [asdict(it) for it in self.iterations], "warnings": self.warnings}


def device_kind_warning(trace_kind: str, target: str) -> str | None:
    """A warning when the trace ran on another kind of device ("cpu" or "gpu") than the ``target`` key.

    The framework runs another op sequence on each: SGD's ``_foreach_`` updates and cuDNN's whole-sequence
    recurrent layers on a GPU, a loop over parameters and step-by-step RNNs on a CPU. An H200 model given
    the CPU traces of its held-out configurations missed by 92% MRE, against 18% from their H200 traces
    (docs/predictor.md, "On an H200").
    """
    target_kind = "cpu" if target.startswith("cpu:") else "gpu"
    if trace_kind == target_kind:
        return None
    ran_on = "a GPU" if trace_kind == "gpu" else "a CPU (no GPU kernels in it)"
    return (f"the trace ran on {ran_on} and the target {target} is a {target_kind.upper()}: the op sequence "
            f"differs between kinds of device, so expect a large error; predict from a {target_kind.upper()} run")


class Predictor:
    """Iteration-time predictor, read like LightGBM's: fit / predict / save / load."""

    def __init__(self, width: int = DEFAULT_WIDTH, stride: int = DEFAULT_STRIDE, objective: str = "log",
                 rounds: int = DEFAULT_ROUNDS, params: dict | None = None, seed: int = 0, predict_rows: str = "central",
                 label_params: dict[str, dict] | None = None, max_unexplained: float | None = MAX_UNEXPLAINED,
                 linear_leaves: bool = True, calibration_folds: int | None = CALIBRATION_FOLDS):
        self.width, self.stride = width, stride
        self.objective, self.rounds, self.params, self.seed = objective, rounds, params, seed
        # "central": each op from its most central window (default); "all": every covering window, averaged (ETS).
        self.predict_rows = predict_rows
        # per booster (duration, gap); None: default_label_params, with linear leaves in the duration
        # booster unless linear_leaves is False (more accurate; constant leaves predict ~15% faster)
        self.label_params = default_label_params(rounds, linear_leaves) if label_params is None else label_params
        # training traces the reconciliation misses by more than this are not learnt from; None: all are
        self.max_unexplained = max_unexplained
        # inner folds of held-out predictions the calibration learns from; None: no calibration
        self.calibration_folds = calibration_folds
        self.models: dict[str, HardwareModel] = {}

    def new_window_model(self) -> WindowLGBM:
        return WindowLGBM(self.objective, self.rounds, self.params, self.seed, predict_rows=self.predict_rows,
                          label_params=self.label_params)

    def fit(self, data: Dataset | list[TraceSample], client=None) -> "Predictor":
        """Trains one model per hardware key of the dataset (or of the given samples)."""
        samples = featurise(data.configs, self.width, self.stride, client) if isinstance(data, Dataset) else data
        by_hardware: dict[str, list[TraceSample]] = {}
        for sample in samples:
            by_hardware.setdefault(sample.config.hardware, []).append(sample)
        for key, group in sorted(by_hardware.items()):
            self.models[key] = fit_hardware_model(key, group, self.new_window_model(), client, self.max_unexplained,
                                                  self.calibration_folds)
        return self

    @property
    def hardware(self) -> list[str]:
        return sorted(self.models)

    def model_for(self, hardware: str | None) -> HardwareModel:
        if not self.models:
            raise ItercastError("the predictor has not been fitted")
        if hardware is None:
            if len(self.models) > 1:
                raise ItercastError(f"the model holds several targets; choose one of {self.hardware}")
            return next(iter(self.models.values()))
        matches = [key for key in self.models if key == hardware or hardware in key]
        if len(matches) != 1:
            raise ItercastError(f"no single target matches {hardware!r}; the model has {self.hardware}")
        return self.models[matches[0]]

    def predict(self, trace, hardware: str | None = None) -> Prediction:
        """Predicts the iteration time of the job in ``trace`` (path or bytes) on the target hardware.

        Only structure is used (op types, shapes, dtypes, phases, order): measured times are ignored.
        """
        start = time.perf_counter()
        self.model_for(hardware)  # an unknown target fails before the trace is read
        prediction = self.predict_timeline(*timeline_and_windows(trace, self.width, self.stride), hardware)
        prediction.seconds = time.perf_counter() - start
        return prediction

    def predict_timeline(self, timeline: Timeline, windows: Windows, hardware: str | None = None) -> Prediction:
        """:meth:`predict` for a trace already scanned, e.g. by a WindowStream fed as the file was written.

        ``windows`` must have this predictor's width and stride.
        """
        start = time.perf_counter()
        if (windows.width, windows.stride) != (self.width, self.stride):
            raise ItercastError(f"windows of width {windows.width}, stride {windows.stride}: this model needs "
                                f"width {self.width}, stride {self.stride}")
        model = self.model_for(hardware)
        samples, names = [], []
        for it in timeline.iterations:
            keep = windows.index[:, 0] == it.index
            part = Windows(windows.x[keep], windows.y[keep], windows.y_sum[keep], windows.index[keep],
                           self.width, self.stride, windows.columns)
            samples.append(TraceSample(None, part, it.ops.stop - it.ops.start, 0.0, float(it.dur_ns)))
            names.extend(canonical_names(timeline.op_names()[it.ops]))
        usable = [s for s in samples if s.op_count > 0]
        if not usable:
            raise ItercastError(f"{timeline.path or 'trace'}: no framework ops to predict from")
        profiled, unprofiled = model.predict_samples(usable)
        iterations, k = [], 0
        for it, sample in zip(timeline.iterations, samples):
            if sample.op_count == 0:
                continue
            measured = it.dur_ns / 1e6 if it.name != "(whole trace)" else None
            iterations.append(IterationPrediction(it.name, float(unprofiled[k]), float(profiled[k]), measured,
                                                  sample.op_count))
            k += 1
        unseen = sum(name not in model.vocabulary for name in names) / max(1, len(names))
        warning = device_kind_warning(timeline.hardware().kind, model.hardware)
        return Prediction(float(np.median(unprofiled)), model.hardware, iterations, unseen,
                          time.perf_counter() - start, [warning] if warning else [])

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        document = {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "feature_schema": FEATURE_SCHEMA_VERSION,
            "width": self.width, "stride": self.stride, "objective": self.objective, "rounds": self.rounds,
            "seed": self.seed,
            "hardware": {key: {"window_model": m.window_model.to_dict(), "head_tail": asdict(m.head_tail),
                               "reconciliation": asdict(m.reconciliation), "calibration": asdict(m.calibration),
                               "vocabulary": sorted(m.vocabulary),
                               "summary": m.summary}
                         for key, m in self.models.items()},
        }
        Path(path).write_text(json.dumps(document))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Predictor":
        try:
            document = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise ItercastError(f"{path}: not a readable itercast model ({error})") from None
        if not isinstance(document, dict) or document.get("format") != MODEL_FORMAT:
            raise ItercastError(f"{path}: not an itercast model file")
        if document.get("version") not in READABLE_VERSIONS:
            raise ItercastError(f"{path}: model file version {document.get('version')}, this itercast reads "
                                f"versions {', '.join(map(str, READABLE_VERSIONS))}: retrain it")
        if document.get("feature_schema") != FEATURE_SCHEMA_VERSION:
            raise ItercastError(f"{path}: the model was trained on feature schema {document.get('feature_schema')},"
                                f" this itercast computes schema {FEATURE_SCHEMA_VERSION}: retrain it")
        predictor = cls(document["width"], document["stride"], document["objective"], document["rounds"],
                        seed=document.get("seed", 0))
        for key, entry in document["hardware"].items():
            try:
                predictor.models[key] = _hardware_model_from(key, entry)
            except ValueError as error:  # ModelTextError (a booster's text) or a malformed roofline
                raise ItercastError(f"{path}: target {key!r}: {error}") from None
            except (KeyError, TypeError) as error:
                raise ItercastError(f"{path}: target {key!r}: malformed entry ({type(error).__name__}: {error})") from None
            predictor.predict_rows = predictor.models[key].window_model.predict_rows
        return predictor


def _hardware_model_from(key: str, entry: dict) -> HardwareModel:
    reconciliation = {"gap_scale": entry["reconciliation"]["scale"], **entry["reconciliation"]}  # version 2: one scale
    return HardwareModel(key, WindowLGBM.from_dict(entry["window_model"]), HeadTail(**entry["head_tail"]),
                         Reconciliation(**reconciliation), set(entry["vocabulary"]), entry.get("summary", {}),
                         Calibration(**entry.get("calibration", {})))  # before version 5: none
