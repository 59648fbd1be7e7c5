"""The Predictor: fit on a labelled dataset, predict any trace's iteration time, save and load.

One model per target hardware (:mod:`itercast.predict.hardware_model`). Each predicts every op's
duration and gap from its window (LightGBM), averages over covering windows and sums: that is the
iteration time *as profiled*; its reconciliation and calibration (:mod:`itercast.predict.reconciliation`)
map that to the time the job sees without a profiler attached. Model files:
:mod:`itercast.predict.model_file`.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from itercast.errors import ItercastError
from itercast.features import DEFAULT_STRIDE, DEFAULT_WIDTH, Windows, timeline_and_windows
from itercast.predict import model_file
from itercast.predict.dataset import Dataset, TraceSample, featurise
from itercast.predict.hardware_model import CALIBRATION_FOLDS, HardwareModel, fit_hardware_model
from itercast.predict.hybrid import MODES
from itercast.predict.lgbm import DEFAULT_ROUNDS, WindowLGBM, default_label_params
from itercast.predict.reconciliation import MAX_UNEXPLAINED
from itercast.timeline import Hardware, Timeline, canonical_names


@dataclass
class IterationPrediction:
    name: str
    predicted_ms: float  # without a profiler, on the target hardware
    predicted_profiled_ms: float
    measured_ms: float | None  # the trace's own ProfilerStep duration, if any
    ops: int
    measured_time_fraction: float = 0.0  # of its op time, priced from the trace's measured times
    unseen_time_fraction: float = 0.0  # of its op time, resting on ops the model has not seen
    interval_ms: list[float] | None = None  # [low, high]: INTERVAL_QUANTILES of held-out errors


@dataclass
class Prediction:
    predicted_ms: float
    hardware: str
    iterations: list[IterationPrediction]
    unseen_fraction: float  # ops whose type never appeared in training
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    mode: str = "structure"  # how it was priced: "structure" or "hybrid"
    mode_reason: str = ""
    measured_time_fraction: float = 0.0  # of the predicted op time, from the trace's measured times
    unseen_time_fraction: float = 0.0  # of the predicted op time, on ops the model has not seen
    interval_ms: list[float] | None = None  # [low, high], an 80% prediction interval where the model has one

    def to_dict(self) -> dict:
        return {"predicted_ms": self.predicted_ms, "hardware": self.hardware, "mode": self.mode,
                "mode_reason": self.mode_reason, "measured_time_fraction": self.measured_time_fraction,
                "unseen_time_fraction": self.unseen_time_fraction,
                "interval_ms": self.interval_ms,
                "unseen_op_fraction": self.unseen_fraction, "seconds": self.seconds,
                "iterations": [asdict(it) for it in self.iterations], "warnings": self.warnings}


def same_hardware(trace_key: str, target: str) -> bool:
    """Whether a trace's hardware key ("gpu:NAME", "cuda:NAME" or "cpu:MODEL:Nt") names the target's."""
    def parts(key: str) -> tuple[str, str]:
        kind, _, name = key.partition(":")
        return ("cpu" if kind == "cpu" else "gpu"), name.strip().lower()
    return parts(trace_key) == parts(target)


def choose_mode(mode: str, trace: Hardware, target: str, trace_hardware: str | None) -> tuple[str, str]:
    """(the pricing mode, why) for a trace that ran on ``trace`` (as its trace tells), predicted for
    ``target``. ``trace_hardware``: the key the caller says the trace ran on, read where the trace cannot
    tell (a CPU trace names no CPU)."""
    if mode not in MODES:
        raise ItercastError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
    if mode != "auto":
        return mode, f"{mode} asked for"
    target_kind = "cpu" if target.startswith("cpu:") else "gpu"
    if trace.kind != target_kind:
        return "structure", f"the trace ran on a {trace.kind.upper()}, the target is a {target_kind.upper()}"
    told = trace.key if trace.kind == "gpu" and trace.name else None
    if told is not None:
        if same_hardware(told, target):
            return "hybrid", f"the trace ran on the target ({trace.name})"
        return "structure", f"the trace ran on {trace.name}, not on the target"
    if trace_hardware is None:
        return "structure", ("the trace does not say what hardware it ran on; name it (--hardware) if it "
                             "ran on the target, for the hybrid pricing")
    if same_hardware(trace_hardware, target):
        return "hybrid", "the trace ran on the target, as the caller says (--hardware)"
    return "structure", f"the trace ran on {trace_hardware}, as the caller says, not on the target"


def device_kind_warning(trace_kind: str, target: str) -> str | None:
    """A warning when the trace ran on another kind of device ("cpu" or "gpu") than the ``target`` key.

    The framework runs another op sequence on each: SGD's ``_foreach_`` updates and cuDNN's whole-sequence
    recurrent layers on a GPU, a loop over parameters and step-by-step RNNs on a CPU, so a model of one
    hardware given another's traces misses badly (docs/decisions.md).
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
                 linear_leaves: bool = True, calibration_folds: int | None = CALIBRATION_FOLDS,
                 anchor_weight: float | None = None):
        self.width, self.stride = width, stride
        self.objective, self.rounds, self.params, self.seed = objective, rounds, params, seed
        # "central": each op from its most central window (default); "all": every covering window, averaged (ETS).
        self.predict_rows = predict_rows
        # per booster (duration, gap); None: default_label_params, with linear leaves in the duration
        # booster unless linear_leaves is False (more accurate; docs/decisions.md)
        self.label_params = default_label_params(rounds, linear_leaves) if label_params is None else label_params
        # training traces the reconciliation misses by more than this are not learnt from; None: all are
        self.max_unexplained = max_unexplained
        # inner folds of held-out predictions the calibration learns from; None: no calibration
        self.calibration_folds = calibration_folds
        # the hybrid pricing's weight on the trace's all-measured estimate; None: fitted on the calibration's
        # held-out predictions with its slope (hardware_model.fit_anchor)
        self.anchor_weight = anchor_weight
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
                                                  self.calibration_folds, self.anchor_weight)
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

    def predict(self, trace, hardware: str | None = None, mode: str = "auto",
                trace_hardware: str | None = None) -> Prediction:
        """Predicts the iteration time of the job in ``trace`` (path or bytes) on the target hardware.

        ``mode``: "structure" prices every op from structure (op types, shapes, dtypes, phases, order)
        alone; "hybrid" prices the ops the model has not seen from their measured times in the trace and
        anchors the rest on them (:meth:`HardwareModel.price`), which is right only when the trace ran
        on the target; "auto" (default) is hybrid when it did: a GPU trace names its device, a CPU trace
        does not, and then ``trace_hardware`` (a hardware key) says where it ran, or structure is used.
        """
        start = time.perf_counter()
        self.model_for(hardware)  # an unknown target fails before the trace is read
        prediction = self.predict_timeline(*timeline_and_windows(trace, self.width, self.stride), hardware,
                                           mode, trace_hardware)
        prediction.seconds = time.perf_counter() - start
        return prediction

    def predict_timeline(self, timeline: Timeline, windows: Windows, hardware: str | None = None,
                         mode: str = "auto", trace_hardware: str | None = None) -> Prediction:
        """:meth:`predict` for a trace already scanned, e.g. by a WindowCollector fed as the file was written.

        ``windows`` must have this predictor's width and stride.
        """
        start = time.perf_counter()
        if (windows.width, windows.stride) != (self.width, self.stride):
            raise ItercastError(f"windows of width {windows.width}, stride {windows.stride}: this model needs "
                                f"width {self.width}, stride {self.stride}")
        model = self.model_for(hardware)
        trace = timeline.hardware()
        mode, reason = choose_mode(mode, trace, model.hardware, trace_hardware)
        samples, names = [], []
        every_name = np.array(canonical_names(timeline.op_names()), dtype=object)
        for it in timeline.iterations:
            keep = windows.index[:, 0] == it.index
            part = Windows(windows.x[keep], windows.y[keep], windows.y_sum[keep], windows.index[keep],
                           self.width, self.stride, windows.columns)
            op_names = list(every_name[it.ops])
            samples.append(TraceSample(None, part, it.ops.stop - it.ops.start, 0.0, float(it.dur_ns), op_names))
            names.extend(op_names)
        usable = [s for s in samples if s.op_count > 0]
        if not usable:
            raise ItercastError(f"{timeline.path or 'trace'}: no framework ops to predict from")
        priced = model.price(usable, mode)
        iterations, k = [], 0
        for it, sample in zip(timeline.iterations, samples):
            if sample.op_count == 0:
                continue
            measured = it.dur_ns / 1e6 if it.name != "(whole trace)" else None
            interval = [float(priced.low_ms[k]), float(priced.high_ms[k])] if model.intervals.get(mode) else None
            iterations.append(IterationPrediction(
                it.name, float(priced.unprofiled_ms[k]), float(priced.profiled_ms[k]), measured, sample.op_count,
                float(priced.measured_share[k]), float(priced.unseen_share[k]), interval))
            k += 1
        unseen = sum(name not in model.vocabulary for name in names) / max(1, len(names))
        warning = device_kind_warning(trace.kind, model.hardware)
        interval = ([float(np.median(priced.low_ms)), float(np.median(priced.high_ms))]
                    if model.intervals.get(mode) else None)
        return Prediction(float(np.median(priced.unprofiled_ms)), model.hardware, iterations, unseen,
                          time.perf_counter() - start, [warning] if warning else [], mode, reason,
                          float(np.median(priced.measured_share)), float(np.median(priced.unseen_share)), interval)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        settings = {"width": self.width, "stride": self.stride, "objective": self.objective, "rounds": self.rounds,
                    "seed": self.seed}
        model_file.write(path, settings, self.models)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Predictor":
        settings, models = model_file.read(path)
        predictor = cls(settings["width"], settings["stride"], settings["objective"], settings["rounds"],
                        seed=settings["seed"])
        predictor.models = models
        for model in models.values():
            predictor.predict_rows = model.window_model.predict_rows
        return predictor
