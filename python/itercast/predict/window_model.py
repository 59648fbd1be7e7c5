"""What a model of op times is to the Predictor and the evaluation: the WindowModel protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

if TYPE_CHECKING:
    from itercast.predict.dataset import TraceSample


class WindowModel(Protocol):
    """Predicts, per sample, its ops' summed durations and summed gaps (ns) from its windows.

    ``separates_gaps``: whether the two are predicted apart. A model that predicts only their sum
    (:class:`SummedOpTime`) returns it as durations with zero gaps, and the reconciliation then
    scales both by one factor.
    """

    name: str
    separates_gaps: bool

    def fit(self, samples: list[TraceSample], client=None) -> WindowModel: ...

    def predict_op_parts(self, samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]: ...


class SummedOpTime:
    """A WindowModel that predicts each sample's summed op time (``predict_op_time``) and no parts."""

    separates_gaps = False

    def predict_op_parts(self, samples: list[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
        return self.predict_op_time(samples), np.zeros(len(samples))


@dataclass(frozen=True)
class ModelKind:
    """How the evaluation makes one named window model, and what it needs and reports."""

    make: Callable[[Any], WindowModel]  # from the evaluation's Settings (rounds, seed, ets_seconds, ets_threads)
    package: str | None  # to be installed for it
    role: str  # "model"; "diagnostic" (reads the test labels) or "variant": chosen by name only
    predictor_model: bool = False  # one of the Predictor's own: calibrated as the Predictor calibrates them
    reports_epochs: bool = False  # trains for a time budget and reports the epochs it got through
    reports_op_classes: bool = False  # predicts each op (predict_ops): its error per op class is reported
    # a Predictor model priced another way than from structure alone (HardwareModel.price): "hybrid"
    pricing: str = "structure"
    anchor_weight: float | None = None  # the hybrid's weight on the trace's measured estimate; None: default
    # predicts whole iterations from the trace (make gives an object with fit(samples) and predict_samples),
    # no op model and no reconciliation
    iteration_level: bool = False

    @property
    def fits_like(self) -> str | None:
        """The model whose fitted HardwareModel this one prices anew (one fit serves both), if any."""
        return "lightgbm" if self.pricing != "structure" else None


def _lightgbm(settings, name: str = "lightgbm", **options) -> WindowModel:
    from itercast.predict.lgbm import WindowLGBM

    model = WindowLGBM("log", settings.rounds, seed=settings.seed, **options)
    model.name = name
    return model


def _lightgbm_constant_leaves(settings) -> WindowModel:
    from itercast.predict.lgbm import default_label_params

    return _lightgbm(settings, "lightgbm-constant",
                     label_params=default_label_params(settings.rounds, linear_leaves=False))


def _ets(settings) -> WindowModel:
    from itercast.predict.ets import ETSReference

    return ETSReference(max_seconds=settings.ets_seconds, threads=settings.ets_threads, seed=settings.seed)


def _opbased(settings) -> WindowModel:
    from itercast.predict.baselines import OpBased

    return OpBased(settings.rounds, settings.seed)


def _untuned(class_name: str) -> Callable[[Any], WindowModel]:
    """A maker of itercast.predict.baselines' ``class_name``, which takes no settings."""
    def make(settings) -> WindowModel:
        from itercast.predict import baselines

        return getattr(baselines, class_name)()
    return make


def _trace_time(settings):
    from itercast.predict.baselines import TraceTime

    return TraceTime()


def _hybrid(name: str, weight: float | None = None, role: str = "variant") -> ModelKind:
    return ModelKind(lambda s: _lightgbm(s, name), "lightgbm", role, predictor_model=True, pricing="hybrid",
                     anchor_weight=weight)


# What Predictor.predict gives a user by default: the hybrid pricing of a trace that ran on the target
# hardware (every test trace of an evaluation did), lightgbm's pricing from structure alone of any other.
DEFAULT_MODEL = "hybrid"
STRUCTURE_MODEL = "lightgbm"

# Every window model by name, the evaluation's default models first, in the order its table lists them:
# the Predictor's default model, its structure-only pricing, then the baselines.
WINDOW_MODELS: dict[str, ModelKind] = {
    # lightgbm's model, the ops it has not seen priced from the trace, anchored on the trace's times
    "hybrid": _hybrid("hybrid", role="model"),
    "lightgbm": ModelKind(_lightgbm, "lightgbm", "model", predictor_model=True, reports_op_classes=True),
    "ets": ModelKind(_ets, "torch", "model", reports_epochs=True),
    "opbased": ModelKind(_opbased, "lightgbm", "model"),
    "linear": ModelKind(_untuned("FlopsBytesLinear"), "scipy", "model"),
    "median": ModelKind(_untuned("TrainingMedian"), None, "model"),
    # the trace's own profiled step times the training set's median un-profiled / profiled ratio
    "trace-time": ModelKind(_trace_time, None, "model", iteration_level=True),
    "oracle": ModelKind(_untuned("MeasuredOpTime"), None, "diagnostic"),
    # lightgbm averaging every window that covers an op (ETS's combination), lightgbm scoring each op's
    # most central window only (the default now: the same as "lightgbm"), and lightgbm with constant
    # leaves in its duration booster (itercast train --constant-leaves: faster)
    "lightgbm-all": ModelKind(lambda s: _lightgbm(s, "lightgbm-all", predict_rows="all"), "lightgbm", "variant",
                              predictor_model=True, reports_op_classes=True),
    "lightgbm-central": ModelKind(lambda s: _lightgbm(s, "lightgbm-central", predict_rows="central"), "lightgbm",
                                  "variant", predictor_model=True, reports_op_classes=True),
    "lightgbm-constant": ModelKind(_lightgbm_constant_leaves, "lightgbm", "variant", predictor_model=True,
                                  reports_op_classes=True),
    # the hybrid at other weights on the trace's all-measured estimate (0: the unseen ops measured only)
    **{f"hybrid-w{percent}": _hybrid(f"hybrid-w{percent}", percent / 100) for percent in (0, 25, 50, 75, 100)},
}


def display_rank(name: str) -> int:
    """Where a model's row goes in the evaluation's tables: 0 the Predictor's default model, 1 its
    structure-only pricing, 2 their variants, 3 the rest (baselines, diagnostics, names not registered)."""
    if name == DEFAULT_MODEL:
        return 0
    if name == STRUCTURE_MODEL:
        return 1
    kind = WINDOW_MODELS.get(name)
    return 2 if kind is not None and kind.predictor_model else 3


def model_names(role: str) -> tuple[str, ...]:
    return tuple(name for name, kind in WINDOW_MODELS.items() if kind.role == role)
