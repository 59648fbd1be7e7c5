"""LightGBM models scored by the native evaluator (csrc/predict/forest*.cpp), without lightgbm.

A :class:`NativeBooster` is read from a booster's text (``Booster.model_to_string()``)
and predicts what ``Booster.predict`` would, for float32 rows: the same trees,
missing-value rules, categorical splits and linear leaves. Training still
needs lightgbm; loading a model and predicting do not.
"""

from __future__ import annotations

import numpy as np

from itercast import _native
from itercast.errors import ItercastError


class ModelTextError(ItercastError, ValueError):
    """A booster's model text is malformed or of a kind the native evaluator does not read."""


class NativeBooster:
    """The prediction half of a ``lightgbm.Booster``, from its model text."""

    def __init__(self, model_text: str, name: str = "booster"):
        try:
            self._forest = _native.Forest(model_text)
        except _native.ForestError as error:
            raise ModelTextError(f"{name}: {error}") from None
        self.model_text = model_text
        self.name = name

    @classmethod
    def from_booster(cls, booster, name: str = "booster") -> "NativeBooster":
        return cls(booster.model_to_string(), name)

    def set_linear_bounds(self, low, high) -> None:
        """Linear leaves read feature f within [low[f], high[f]] (float32), e.g. the range the booster was
        trained on: their slopes then stop at its edge. Splits read the values as they are."""
        low = np.asarray(low, dtype=np.float32).tolist()
        high = np.asarray(high, dtype=np.float32).tolist()
        try:
            self._forest.set_linear_bounds(low, high)
        except ValueError as error:
            raise ValueError(f"{self.name}: {error}") from None

    @property
    def linear_bounds(self) -> tuple[list[float], list[float]] | None:
        """(low, high) as set by :meth:`set_linear_bounds`, or None."""
        return self._forest.linear_bounds

    @property
    def num_features(self) -> int:
        return self._forest.num_features

    @property
    def num_trees(self) -> int:
        return self._forest.num_trees

    def predict(self, x: np.ndarray, rows: np.ndarray | None = None, raw_score: bool = False) -> np.ndarray:
        """``Booster.predict(x[rows], raw_score=raw_score)``; x is converted to float32 C order if it is not."""
        return self._forest.predict(x, rows, raw_score=raw_score)

