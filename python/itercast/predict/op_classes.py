"""Where an iteration's error comes from: measured and predicted time per op class, duration and gap apart.

A model that misses a regime (memory-bound embedding updates, the large activations of a U-Net) misses
it in one op class, and summed over the iteration that miss hides among the rest. This module keeps, per
tested configuration, its summed measured and predicted durations and gaps per op class (the schema's
``class=`` one-hot), from the per-op predictions of a model that makes them (``predict_ops``); the
evaluation tabulates them (:func:`class_rows`).

Times here are profiled op times, as the trace measured them, before head/tail, reconciliation and
calibration: the op models' own error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from itercast.predict.rows import CLASS_COLUMNS, LABELS, OP_FEATURES, Rows

CLASS_NAMES = [OP_FEATURES[c].split("=", 1)[1] for c in CLASS_COLUMNS]
# A class counts in a configuration's row of the table when it holds at least this share of the
# configuration's measured op time: a class of a few microseconds has a large relative error that
# no iteration feels.
MIN_SHARE = 0.01


def op_class_index(x: np.ndarray) -> np.ndarray:
    """Each row's op class (an index into CLASS_NAMES), from the op block's class one-hot."""
    return np.argmax(x[:, CLASS_COLUMNS], axis=1)


def class_sums(classes: np.ndarray, owners: np.ndarray, values: np.ndarray, samples: int) -> np.ndarray:
    """(samples, classes, labels): ``values`` ((labels, rows) or (rows,)) summed per sample and op class."""
    values = np.atleast_2d(values)
    key = owners.astype(np.int64) * len(CLASS_NAMES) + classes
    size = samples * len(CLASS_NAMES)
    sums = [np.bincount(key, weights=v, minlength=size).reshape(samples, len(CLASS_NAMES)) for v in values]
    return np.stack(sums, axis=-1)


def measured_and_predicted(rows: Rows, predicted: np.ndarray, samples) -> tuple[np.ndarray, np.ndarray]:
    """(measured, predicted), each (samples, classes, 2) ns: durations and gaps per op class.

    ``rows``: one row per op (central pairs), with labels; ``predicted``: (2, rows) durations and gaps.
    """
    classes = op_class_index(rows.x)
    measured = class_sums(classes, rows.sample, np.stack([rows.duration, rows.gap]), len(samples))
    return measured, class_sums(classes, rows.sample, predicted, len(samples))


@dataclass
class ClassTimes:
    """Per tested configuration: its (classes, 2) measured and predicted op time, ns."""

    measured: dict[str, np.ndarray] = field(default_factory=dict)
    predicted: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, config_ids, measured: np.ndarray, predicted: np.ndarray) -> None:
        for i, config_id in enumerate(config_ids):
            self.measured[config_id], self.predicted[config_id] = measured[i], predicted[i]

    def only(self, config_ids) -> "ClassTimes":
        keep = [c for c in self.measured if c in config_ids]
        return ClassTimes({c: self.measured[c] for c in keep}, {c: self.predicted[c] for c in keep})

    def __bool__(self) -> bool:
        return bool(self.measured)


def class_rows(times: ClassTimes, min_share: float = MIN_SHARE) -> list[dict]:
    """One row per (op class, label) that holds at least ``min_share`` of some configuration's op time:

    - ``configurations``: those where it does; ``share``: its part of all measured op time;
    - ``mre``: mean over them of |predicted / measured - 1| of the class's summed time;
    - ``bias``: the median of predicted / measured - 1 (negative: under-predicted);
    - ``points``: mean over every configuration of |predicted - measured| of the class / the
      configuration's measured op time: how much of the iteration's error it can explain.

    Sorted by ``points``, largest first.
    """
    if not times:
        return []
    ids = list(times.measured)
    measured = np.stack([times.measured[c] for c in ids])  # (configs, classes, 2)
    predicted = np.stack([times.predicted[c] for c in ids])
    totals = measured.sum(axis=(1, 2))
    rows = []
    for k, name in enumerate(CLASS_NAMES):
        for j, label in enumerate(LABELS):
            m, p = measured[:, k, j], predicted[:, k, j]
            counted = (m > 0) & (m >= min_share * totals)
            if not counted.any():
                continue
            ratio = p[counted] / m[counted] - 1
            rows.append({"class": name, "label": label, "configurations": int(counted.sum()),
                         "share": float(m.sum() / totals.sum()), "mre": float(np.mean(np.abs(ratio))),
                         "bias": float(np.median(ratio)),
                         "points": float(np.mean(np.abs(p - m) / np.maximum(totals, 1e-9)))})
    return sorted(rows, key=lambda row: -row["points"])


def class_table(model: str, times: ClassTimes, limit: int | None = None) -> str:
    """:func:`class_rows` as text, the ``limit`` largest contributions (all with None)."""
    rows = class_rows(times)[:limit]
    lines = [f"{model}: per op class (profiled op time; configurations where the class is >= {MIN_SHARE:.0%})",
             f"{'class':12} {'label':8} {'n':>4} {'share':>6} {'MRE':>7} {'bias':>7} {'points':>7}"]
    lines += [f"{r['class']:12} {r['label']:8} {r['configurations']:4d} {r['share']:6.1%} {r['mre']:7.1%} "
              f"{r['bias']:+7.1%} {r['points']:7.2%}" for r in rows]
    lines.append("bias: median of predicted / measured - 1; points: mean |error| of the class / the iteration's op time.")
    return "\n".join(lines)
