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
from itercast.predict.lgbm import DEFAULT_ROUNDS, WindowLGBM, default_label_params
from itercast.predict.reconciliation import MAX_UNEXPLAINED
from itercast.timeline import Timeline, canonical_names


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
                 linear_leaves: bool = True, calibration_folds: int | None = CALIBRATION_FOLDS):
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
        """:meth:`predict` for a trace already scanned, e.g. by a WindowCollector fed as the file was written.

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
