"""What a model has not seen, and the trace's own times that price it.

A structural model prices an op from what it learnt of its type and size. An op of a type it never saw,
or of a size far outside what it saw of that type, it prices from neighbours that are no guide
(docs/predictor.md, "Hybrid pricing"). When the trace was recorded on the hardware the model targets, the
trace itself measured that op: the hybrid pricing takes those ops' measured durations and gaps instead,
mapped to the un-profiled step by the same reconciliation as the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from itercast.predict.rows import F, LOG_BYTES, LOG_FLOPS, central_pair_per_op, window_blocks

# How the Predictor prices a trace: "structure" from op types, shapes and order alone; "hybrid" also
# from the trace's measured times of the ops the model has not seen; "auto" hybrid when the trace ran
# on the target hardware.
MODES = ("auto", "hybrid", "structure")

# An op of a seen type counts as unseen when its FLOPs or bytes lie this many times beyond the range
# its type had in training (e at 1: log-space distance 1 = 2.7x).
REGIME_MARGIN = float(np.log(10.0))


def op_features(sample) -> np.ndarray:
    """(ops, F) float32: each op's own features, in op order (from its most central window)."""
    window, position = central_pair_per_op(sample.windows)
    return window_blocks(sample.windows)[window, position, 1:F + 1]


def measured_each_op(sample) -> np.ndarray:
    """(ops, 2) ns: each op's measured (duration, gap) in the trace, in op order."""
    window, position = central_pair_per_op(sample.windows)
    return np.asarray(sample.windows.y[window, position], dtype=np.float64)


@dataclass
class OpRegimes:
    """Per canonical op name, the range of log(1 + FLOPs) and log(1 + bytes) its ops had in training:
    ``ranges[name] = [low flops, high flops, low bytes, high bytes]`` (read once, when made)."""

    ranges: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self):
        # names -> rows of one bounds table, the last row NaN (an unseen name): a lookup per op, not a list
        self._row = {name: k for k, name in enumerate(self.ranges)}
        self._bounds = np.array([*self.ranges.values(), [np.nan] * 4], dtype=np.float64).reshape(-1, 4)

    @classmethod
    def fit(cls, samples) -> "OpRegimes":
        ranges: dict[str, list[float]] = {}
        for sample in samples:
            features = op_features(sample)
            for name, flops, bytes_ in zip(sample.op_names, features[:, LOG_FLOPS], features[:, LOG_BYTES]):
                flops, bytes_ = float(flops), float(bytes_)
                seen = ranges.get(name)
                if seen is None:
                    ranges[name] = [flops, flops, bytes_, bytes_]
                else:
                    seen[0], seen[1] = min(seen[0], flops), max(seen[1], flops)
                    seen[2], seen[3] = min(seen[2], bytes_), max(seen[3], bytes_)
        return cls(ranges)

    @classmethod
    def names_only(cls, vocabulary) -> "OpRegimes":
        """Every size seen for each name (model files from before the ranges were kept)."""
        return cls({name: [-np.inf, np.inf, -np.inf, np.inf] for name in vocabulary})

    @property
    def vocabulary(self) -> set[str]:
        return set(self.ranges)

    def unseen(self, sample, margin: float = REGIME_MARGIN) -> np.ndarray:
        """(ops,) bool: which of the sample's ops are of a type never seen in training, or of a FLOP or
        byte count more than exp(``margin``) times outside the range its type had there."""
        features = op_features(sample)
        missing = len(self._bounds) - 1
        bounds = self._bounds[np.fromiter((self._row.get(name, missing) for name in sample.op_names),
                                          dtype=np.int64, count=len(sample.op_names))]
        flops, bytes_ = features[:, LOG_FLOPS].astype(np.float64), features[:, LOG_BYTES].astype(np.float64)
        with np.errstate(invalid="ignore"):
            inside = ((flops >= bounds[:, 0] - margin) & (flops <= bounds[:, 1] + margin)
                      & (bytes_ >= bounds[:, 2] - margin) & (bytes_ <= bounds[:, 3] + margin))
        return ~inside  # NaN bounds (an unseen name) compare False

    def to_dict(self) -> dict:
        return {name: [float(v) for v in bounds] for name, bounds in sorted(self.ranges.items())}

    @classmethod
    def from_dict(cls, data: dict) -> "OpRegimes":
        return cls({name: [float(v) for v in bounds] for name, bounds in data.items()})


@dataclass
class OpTimes:
    """Per sample, its summed op times (ns) split the ways the pricing modes need them."""

    predicted: np.ndarray  # (samples, 2): every op's predicted (duration, gap), summed
    predicted_unseen: np.ndarray  # (samples, 2): the same over the unseen ops only
    measured: np.ndarray  # (samples, 2): every op's measured (duration, gap), summed
    measured_unseen: np.ndarray  # (samples, 2): the same over the unseen ops only

    def parts(self, mode: str) -> np.ndarray:
        """(samples, 2) summed (durations, gaps) as ``mode`` prices them: "structure" every op predicted,
        "hybrid" the unseen ops measured, "measured" every op measured."""
        if mode == "structure":
            return self.predicted
        if mode == "hybrid":
            return self.predicted - self.predicted_unseen + self.measured_unseen
        if mode == "measured":
            return self.measured
        raise ValueError(f"unknown pricing mode {mode!r}")

    def unseen_share(self, mode: str) -> np.ndarray:
        """Per sample: the share of the op time ``mode`` prices that rests on unseen ops."""
        unseen = self.predicted_unseen if mode == "structure" else self.measured_unseen
        return _share(unseen.sum(axis=1), self.parts(mode).sum(axis=1))


def op_times(samples, each_op_predicted: list[np.ndarray], regimes: OpRegimes) -> OpTimes:
    """:class:`OpTimes` from each sample's per-op predictions ((ops, 2) ns each, in op order)."""
    sums = np.zeros((4, len(samples), 2))
    for k, (sample, predicted) in enumerate(zip(samples, each_op_predicted)):
        measured, unseen = measured_each_op(sample), regimes.unseen(sample)
        sums[:, k] = [predicted.sum(axis=0), predicted[unseen].sum(axis=0), measured.sum(axis=0),
                      measured[unseen].sum(axis=0)]
    return OpTimes(*sums)


def _share(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    return np.divide(part, whole, out=np.zeros_like(part, dtype=np.float64), where=whole > 0)
