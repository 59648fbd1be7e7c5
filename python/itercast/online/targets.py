"""Which (model, hardware) pairs to predict for: every online tool takes one or more models."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Union

from itercast.errors import ItercastError
from itercast.predict import Predictor

ModelLike = Union[Predictor, str, os.PathLike]


@dataclass(frozen=True)
class Target:
    """One target hardware of one model."""

    predictor: Predictor
    hardware: str  # the model's key for it, e.g. "cpu:Intel(R) Xeon(R) Processor:1t"
    mode: str = "auto"  # how to price a trace (Predictor.predict)
    trace_hardware: str | None = None  # the key the traces ran on, where a trace cannot tell (a CPU trace)

    @property
    def shape(self) -> tuple[int, int]:
        """(width, stride) of the windows the model reads."""
        return self.predictor.width, self.predictor.stride


def load_targets(models: ModelLike | Iterable[ModelLike], hardware: str | Iterable[str] | None = None,
                 mode: str = "auto", trace_hardware: str | None = None) -> list[Target]:
    """Targets of one or several models (objects or model-file paths).

    ``hardware``: None for every target of every model, else one or more keys
    (or unique parts of keys, as ``Predictor.predict`` accepts). ``mode`` and ``trace_hardware``: how each
    target prices a trace (``Predictor.predict``).
    """
    predictors = [_as_predictor(m) for m in ([models] if isinstance(models, (Predictor, str, os.PathLike))
                                             else models)]
    if not predictors:
        raise ItercastError("no model given")
    everything = [Target(p, key, mode, trace_hardware) for p in predictors for key in p.hardware]
    if hardware is None:
        chosen = everything
    else:
        wanted = [hardware] if isinstance(hardware, str) else list(hardware)
        chosen = [_one_target(everything, text) for text in wanted]
    keys = [t.hardware for t in chosen]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ItercastError(f"several models (or choices) target {', '.join(repeated)}: keep one of each")
    return chosen


def _as_predictor(model: ModelLike) -> Predictor:
    if isinstance(model, Predictor):
        if not model.models:
            raise ItercastError("the predictor has not been fitted")
        return model
    return Predictor.load(model)


def _one_target(targets: list[Target], text: str) -> Target:
    exact = [t for t in targets if t.hardware == text]
    matches = exact or [t for t in targets if text in t.hardware]
    if len(matches) != 1:
        raise ItercastError(f"no single target matches {text!r}; the models have "
                            f"{sorted(t.hardware for t in targets)}")
    return matches[0]
