"""LightGBM on window rows: one booster for op durations, one for gaps."""

from __future__ import annotations

import warnings

import numpy as np

from itercast.predict.forest import NativeBooster
from itercast.predict.roofline import Roofline
from itercast.predict.rows import (LABELS, all_pairs, central_pair_per_op, one_pair_per_op, op_sums, per_op,
                                  rows_of)

# 150 rounds at 0.1 matched 300 at 0.08 in by-architecture error on the CPU collection, at half the time.
DEFAULT_ROUNDS = 150
DEFAULT_PARAMS = {
    "learning_rate": 0.1,
    "num_leaves": 63,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "max_bin": 63,
    "verbose": -1,
    "num_threads": 0,
}
OBJECTIVES = ("l2", "log")
# Half of each duration row's weight is its op's share of its iteration's time (see row_weights).
DEFAULT_TIME_WEIGHT = 0.5
# A sample of n ops weighs n ** this in both boosters' fits: between every op alike (1: long iterations
# dominate) and every sample alike (0). Why 0.5: docs/decisions.md.
DEFAULT_SAMPLE_EXPONENT = 0.5


def default_label_params(rounds: int, linear_leaves: bool = True) -> dict[str, dict]:
    """The duration booster: linear leaves (unless ``linear_leaves`` is False), four fifths of the
    rounds at 1.25 times the learning rate. The gap booster: 31 leaves, half the rounds at twice
    the learning rate.

    A duration is close to linear in log FLOPs and log bytes within a kind of op, and a held-out
    architecture's ops are often larger than any the training set has: a constant leaf stops at the
    edge of the data, a linear one goes on: linear leaves were more accurate by architecture and by
    line; on the gap booster they changed nothing, so it keeps constant leaves. They cost prediction
    time: a leaf's output is a dot product over its ~5 features, not a constant. Why these rounds,
    this learning rate and this L2 penalty: docs/decisions.md.

    Scoring cost is trees x splits x the leaf-set halves they touch, so this gap booster costs
    an eighth of a 63-leaf, full-round one, and is as accurate. Figures: docs/decisions.md.
    """
    gap = {"gap": {"num_leaves": 31, "learning_rate": 0.2, "rounds": max(1, rounds // 2)}}
    if not linear_leaves:
        return gap
    duration = {"linear_tree": True, "linear_lambda": 30.0, "learning_rate": 0.125, "rounds": max(1, rounds * 4 // 5)}
    return {"duration": duration, **gap}


# Which rows predict an op: every covering window (averaged, as ETS), or only the most central one
# (the default: a quarter of the rows, and as accurate by architecture).
PREDICT_ROWS = {"all": all_pairs, "central": central_pair_per_op}


def check_unit_interval(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {value}")
    return value


def row_weights(duration_ns: np.ndarray, sample: np.ndarray, time_weight: float,
                sample_exponent: float = DEFAULT_SAMPLE_EXPONENT) -> np.ndarray | None:
    """Training weights of a booster's rows; None (all alike) for time_weight 0 and exponent 1.

    Targets are log durations, so every op counts alike in the fit, while an iteration's time (what
    is scored) is mostly a few large ops. Each row's weight is ``1 - time_weight`` plus
    ``time_weight`` times its op's share of its sample's summed duration, scaled so that a sample's
    time-share part sums to its row count, as the uniform part does: within a sample the ops that
    take its time weigh more. Then a sample of n rows is scaled to weigh n ** ``sample_exponent``
    in all: each configuration is scored once, whatever its op count. Weights are normalised to
    mean 1. They are computed from the training labels only; prediction does not use them.
    """
    check_unit_interval("time_weight", time_weight)
    check_unit_interval("sample_exponent", sample_exponent)
    if time_weight == 0.0 and sample_exponent == 1.0:
        return None
    duration = np.maximum(np.asarray(duration_ns, dtype=np.float64), 0.0)
    sample = np.asarray(sample, dtype=np.int64)
    total, count = np.bincount(sample, weights=duration), np.bincount(sample)
    share = np.divide(duration, total[sample], out=np.zeros_like(duration), where=total[sample] > 0)
    weights = (1.0 - time_weight) + time_weight * share * count[sample]
    weights *= count[sample].astype(np.float64) ** (sample_exponent - 1.0)
    return weights / weights.mean()


def to_target(ns: np.ndarray, objective: str) -> np.ndarray:
    """Labels in microseconds; 'log' compresses them (sign kept: device gaps can be negative)."""
    us = ns / 1000.0
    return np.sign(us) * np.log1p(np.abs(us)) if objective == "log" else us


def from_target(values: np.ndarray, objective: str) -> np.ndarray:
    us = np.sign(values) * np.expm1(np.abs(values)) if objective == "log" else values
    return us * 1000.0


class WindowLGBM:
    """Predicts each op's duration and gap from its window; sums per iteration.

    Training uses lightgbm; prediction scores the trained boosters natively
    (:class:`NativeBooster`), so a loaded model predicts without lightgbm.

    A booster with linear leaves reads each feature within the range of its training rows
    (:meth:`NativeBooster.set_linear_bounds`): beyond it, a leaf's slope fitted on the data's edge went
    on (an in-place add's falling bandwidth in training carried past the largest training tensor), where
    the roofline prior extrapolates by the work (docs/decisions.md).
    """

    name = "lightgbm"
    separates_gaps = True

    def __init__(self, objective: str = "log", rounds: int = DEFAULT_ROUNDS, params: dict | None = None, seed: int = 0,
                 rows: str = "one", predict_rows: str = "central", roofline: bool = True,
                 label_params: dict[str, dict] | None = None, time_weight: float = DEFAULT_TIME_WEIGHT,
                 sample_exponent: float = DEFAULT_SAMPLE_EXPONENT):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}")
        if predict_rows not in PREDICT_ROWS:
            raise ValueError(f"predict_rows must be one of {tuple(PREDICT_ROWS)}")
        self.objective, self.rounds, self.seed, self.rows = objective, rounds, seed, rows
        self.predict_rows = predict_rows
        self.params = {**DEFAULT_PARAMS, **(params or {}), "seed": seed}
        # Per label ("duration", "gap"): LightGBM parameters over ``params``, and "rounds" over ``rounds``.
        if label_params is None:
            label_params = default_label_params(rounds)
        self.label_params = {label: dict(values) for label, values in label_params.items()}
        if set(self.label_params) - set(LABELS):
            raise ValueError(f"label_params keys must be among {LABELS}")
        self.boosters: dict[str, NativeBooster] = {}
        # Durations are learnt as a correction to this prior, which extrapolates to larger ops.
        self.roofline: Roofline | None = None
        self.use_roofline = roofline
        # The duration booster's rows weigh by their op's share of the iteration's time this much.
        self.time_weight = check_unit_interval("time_weight", time_weight)
        # ... and a sample of n ops weighs n ** sample_exponent in all.
        self.sample_exponent = check_unit_interval("sample_exponent", sample_exponent)

    def _training_rows(self, samples):
        rng = np.random.default_rng(self.seed)
        pick = all_pairs if self.rows == "all" else (lambda w: one_pair_per_op(w, rng))
        return rows_of(samples, pick)

    def fit(self, samples, client=None) -> "WindowLGBM":
        import lightgbm

        rows = self._training_rows(samples)
        self.roofline = Roofline.fit(rows.x, rows.duration) if self.use_roofline else None
        for label, values in (("duration", rows.duration), ("gap", rows.gap)):
            target = to_target(values, self.objective)
            prior = self.prior_score(label, rows.x)
            init = prior if isinstance(prior, np.ndarray) else None  # LightGBM takes no scalar initial score
            # both boosters weigh samples alike; only durations weigh ops by their share of the time
            time_weight = self.time_weight if label == "duration" else 0.0
            weight = row_weights(rows.duration, rows.sample, time_weight, self.sample_exponent)
            params = {**self.params, **self.label_params.get(label, {})}
            rounds = params.pop("rounds", self.rounds)
            if client is not None:
                booster = _fit_on_dask(client, rows.x, target, init, params, rounds, weight)
            else:
                data = lightgbm.Dataset(rows.x, target, init_score=init, weight=weight, free_raw_data=True)
                booster = lightgbm.train({**params, "objective": "regression"}, data, num_boost_round=rounds)
            self.boosters[label] = NativeBooster.from_booster(booster, label)
            if self.boosters[label]._forest.has_linear:
                self.boosters[label].set_linear_bounds(rows.x.min(axis=0), rows.x.max(axis=0))
        return self

    def prior_score(self, label: str, x: np.ndarray) -> np.ndarray | float:
        """The roofline prior in target space, which the booster's scores add to (0 for the gap)."""
        if label != "duration" or self.roofline is None:
            return 0.0
        return to_target(self.roofline.predict_ns(x), self.objective)

    def _predict(self, label: str, x: np.ndarray) -> np.ndarray:
        return from_target(self.boosters[label].predict(x) + self.prior_score(label, x), self.objective)

    def predict_op_time(self, samples) -> np.ndarray:
        """Per sample: summed predicted duration + gap of its ops, ns."""
        durations, gaps = self.predict_op_parts(samples)
        return durations + gaps

    def predict_op_parts(self, samples) -> tuple[np.ndarray, np.ndarray]:
        """Per sample: summed predicted durations and summed predicted gaps of its ops, ns.

        Every row is scored: byte-identical rows are rare (on the CPU collection none, as the
        window's start position is a feature), so finding them costs more than it saves.
        """
        rows = rows_of(samples, PREDICT_ROWS[self.predict_rows], labels=False)
        durations, gaps = op_sums(rows, np.stack([self._predict(label, rows.x) for label in LABELS]), len(samples))
        return durations, gaps

    def predict_each_op(self, samples) -> list[np.ndarray]:
        """Per sample: (ops, 2) ns, each op's predicted (duration, gap) in op order (the hybrid pricing
        replaces some of them by the trace's own)."""
        rows = rows_of(samples, PREDICT_ROWS[self.predict_rows], labels=False)
        return per_op(rows, np.stack([self._predict(label, rows.x) for label in LABELS]), len(samples))

    def predict_ops(self, samples):
        """(rows, predicted): one row per op, from its most central window, with its measured labels, and
        its predicted (duration, gap) in ns, shape (2, rows). For per-op-class errors (predict.op_classes)."""
        rows = rows_of(samples, central_pair_per_op)
        return rows, np.stack([self._predict(label, rows.x) for label in LABELS])

    def to_dict(self) -> dict:
        return {"objective": self.objective, "rounds": self.rounds, "seed": self.seed, "rows": self.rows,
                "predict_rows": self.predict_rows, "params": self.params, "label_params": self.label_params,
                "time_weight": self.time_weight, "sample_exponent": self.sample_exponent,
                "roofline": self.roofline.to_list() if self.roofline is not None else None,
                "roofline_bytes_from_output": self.roofline is not None and self.roofline.bytes_from_output,
                "boosters": {label: booster.model_text for label, booster in self.boosters.items()},
                "linear_bounds": {label: booster.linear_bounds for label, booster in self.boosters.items()
                                  if booster.linear_bounds is not None}}

    @classmethod
    def from_dict(cls, data: dict) -> "WindowLGBM":
        model = cls(data["objective"], data["rounds"], data["params"], data["seed"], data["rows"], data["predict_rows"],
                    roofline=data["roofline"] is not None, label_params=data["label_params"],
                    time_weight=data["time_weight"], sample_exponent=data["sample_exponent"])
        if model.use_roofline:
            model.roofline = Roofline.from_list(data["roofline"], data["roofline_bytes_from_output"])
        model.boosters = {label: NativeBooster(text, label) for label, text in data["boosters"].items()}
        for label, (low, high) in data["linear_bounds"].items():
            model.boosters[label].set_linear_bounds(low, high)
        return model


def _fit_on_dask(client, x: np.ndarray, target: np.ndarray, init: np.ndarray | None, params: dict, rounds: int,
                 weight: np.ndarray | None = None):
    """Trains with lightgbm.dask on the client's workers; returns a plain Booster."""
    import dask.array as da
    from lightgbm.dask import DaskLGBMRegressor

    workers = max(1, len(client.scheduler_info()["workers"]))
    chunk = max(1, -(-len(x) // workers))
    dx = da.from_array(x, chunks=(chunk, x.shape[1]))
    dy = da.from_array(target, chunks=chunk)
    options = {k: v for k, v in params.items() if k not in ("verbose", "num_threads", "seed")}
    regressor = DaskLGBMRegressor(client=client, n_estimators=rounds, random_state=params.get("seed", 0),
                                  verbose=-1, **options)
    with warnings.catch_warnings():
        # lightgbm.dask passes its own default n_jobs and then warns that it ignores it: nothing a caller sets
        # can avoid it.
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored", category=UserWarning)
        regressor.fit(dx, dy, sample_weight=None if weight is None else da.from_array(weight, chunks=chunk),
                      init_score=None if init is None else da.from_array(init, chunks=chunk))
    return regressor.to_local().booster_
