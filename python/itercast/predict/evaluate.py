"""Side-by-side evaluation: every model trained and tested on the same split.

Each model predicts a test trace's summed op time; the harness adds the
training median head/tail and maps it to the un-profiled iteration time with
a :class:`~itercast.predict.reconciliation.Reconciliation` fitted on the training
samples (both via :func:`fit_hardware_model`, as the Predictor does); the
Predictor's own models (lightgbm and its variants) are calibrated as it calibrates
them, on held-out predictions of their training set. Errors
are reported against both labels: the un-profiled ``step_ms`` the job
experiences, and the trace's own profiled iteration.
"""

from __future__ import annotations

import csv
import logging
import math
import pickle
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from itercast.errors import ItercastError
from itercast.predict.dataset import SAMPLE_VERSION, Dataset, LabelFloor, TraceSample, featurise, group_labels
from itercast.predict.lgbm import DEFAULT_ROUNDS
from itercast.predict.hardware_model import CALIBRATION_FOLDS, fit_hardware_model
from itercast.predict.op_classes import ClassTimes, class_rows, class_table, measured_and_predicted
from itercast.predict.window_model import WINDOW_MODELS, WindowModel, display_rank, model_names

log = logging.getLogger(__name__)

MODEL_NAMES = model_names("model")
DIAGNOSTICS = model_names("diagnostic")  # chosen by name only: not models, they read the test labels
VARIANTS = model_names("variant")  # chosen by name only: lightgbm's variants (predict.window_model)
NEEDS = {**{name: kind.package for name, kind in WINDOW_MODELS.items() if kind.package}, "plot": "matplotlib"}
# The held-out predictions file (`itercast evaluate --predictions-csv`): these columns, then one
# `predicted_ms:<model>` column per evaluated model. itercast.sched.jobs reads it.
PREDICTION_COLUMNS = ("config_id", "model", "line", "family", "hardware", "batch_size", "measured_ms")
PREDICTED_PREFIX = "predicted_ms:"


def require(what: str) -> None:
    """Fails early, with the package to install, when an optional dependency is missing."""
    import importlib.util

    package = NEEDS.get(what)
    if package and importlib.util.find_spec(package) is None:
        raise ItercastError(f"{what} needs the {package} package: pip install {package}")


@dataclass
class Settings:
    models: tuple[str, ...] = MODEL_NAMES
    split: str = "arch"
    folds: int = 1  # 1: a single holdout of ``test_fraction`` of the groups
    seed: int = 0
    test_fraction: float = 0.2
    rounds: int = DEFAULT_ROUNDS  # LightGBM rounds, window model and OpBased alike
    ets_seconds: float = 120.0
    ets_threads: int | None = None
    calibration_folds: int | None = CALIBRATION_FOLDS  # the Predictor's models; None: uncalibrated


def new_model(name: str, settings: Settings) -> WindowModel:
    if name not in WINDOW_MODELS:
        raise ItercastError(f"unknown model {name!r}: choose from {', '.join(MODEL_NAMES + DIAGNOSTICS + VARIANTS)}")
    return WINDOW_MODELS[name].make(settings)


def split_folds(samples, split: str, folds: int = 1, seed: int = 0,
                test_fraction: float = 0.2) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) index arrays. Groups (architectures or configurations) never straddle train and test.

    ``folds`` > 1: the shuffled groups are dealt round-robin into k folds, each the test set once.
    """
    if split == "op":
        return op_type_folds(samples, folds, seed)
    groups = group_labels(samples, split)
    unique = np.unique(groups)
    if len(unique) < 2:
        raise ItercastError(f"a split by {split} needs at least 2 groups, the data has {len(unique)}")
    order = np.random.default_rng(seed).permutation(unique)
    if folds <= 1:
        test_count = min(len(unique) - 1, max(1, round(test_fraction * len(unique))))
        assignments = [order[:test_count]]
    else:
        if folds > len(unique):
            raise ItercastError(f"{folds} folds but only {len(unique)} groups to split by {split}")
        assignments = [order[k::folds] for k in range(folds)]
    result = []
    for test_groups in assignments:
        is_test = np.isin(groups, test_groups)
        result.append((np.flatnonzero(~is_test), np.flatnonzero(is_test)))
    return result


# An op type run by more than this share of the architecture lines is common (a linear layer, an add):
# the op-type split holds out only the rarer ones.
COMMON_OP_SHARE = 0.5


def op_type_folds(samples, folds: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) index arrays that hold out op types, not only architectures.

    The op types that at most COMMON_OP_SHARE of the architecture lines run are dealt, shuffled, into
    ``folds`` sets. A line is tested in the fold of its rarest such type (ties by name); a fold trains only
    on configurations that run none of its types. Each tested configuration thus runs at least one op type
    its model never saw. Lines that run only common types are never tested.
    """
    lines = group_labels(samples, "line")
    ops_of_line: dict[str, set[str]] = {}
    for line, sample in zip(lines, samples):
        ops_of_line.setdefault(line, set()).update(sample.op_names)
    lines_running: dict[str, int] = {}
    for names in ops_of_line.values():
        for name in names:
            lines_running[name] = lines_running.get(name, 0) + 1
    rare = sorted(name for name, count in lines_running.items() if count <= COMMON_OP_SHARE * len(ops_of_line))
    if len(rare) < max(2, folds):
        raise ItercastError(f"an op-type split needs at least {max(2, folds)} op types that at most "
                            f"{COMMON_OP_SHARE:.0%} of the lines run; the data has {len(rare)}")
    order = np.random.default_rng(seed).permutation(rare)
    fold_of_op = {name: k % max(1, folds) for k, name in enumerate(order)}
    fold_of_line = {}
    for line, names in ops_of_line.items():
        own = [name for name in names if name in fold_of_op]
        if own:
            rarest = min(own, key=lambda name: (lines_running[name], name))
            fold_of_line[line] = fold_of_op[rarest]
    result = []
    for k in range(max(1, folds)):
        held_out = {name for name, fold in fold_of_op.items() if fold == k}
        test = np.array([i for i, line in enumerate(lines) if fold_of_line.get(line) == k], dtype=np.int64)
        train = np.array([i for i, sample in enumerate(samples)
                          if fold_of_line.get(lines[i]) != k and not held_out & set(sample.op_names)], dtype=np.int64)
        if len(test) and len(train):
            result.append((train, test))
    if not result:
        raise ItercastError("the op-type split left no fold with both training and test configurations")
    return result


@dataclass
class Metrics:
    mre: float  # mean relative error
    rmse_ms: float
    p90: float  # 90th percentile of the relative error

    @classmethod
    def of(cls, predicted_ms, measured_ms) -> "Metrics":
        predicted, measured = np.asarray(predicted_ms, float), np.asarray(measured_ms, float)
        relative = np.abs(predicted - measured) / measured
        return cls(float(relative.mean()), float(np.sqrt(np.mean((predicted - measured) ** 2))),
                   float(np.percentile(relative, 90)))


@dataclass
class ModelResult:
    """One model's test predictions over every fold, with the labels they are judged against."""

    name: str
    predicted_ms: list[float] = field(default_factory=list)  # un-profiled
    predicted_profiled_ms: list[float] = field(default_factory=list)
    measured_ms: list[float] = field(default_factory=list)  # step_ms
    measured_profiled_ms: list[float] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    config_ids: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)  # the zoo model (the split's architecture) of each
    train_seconds: list[float] = field(default_factory=list)  # per fitted model
    predict_seconds: float = 0.0
    epochs: list[float] = field(default_factory=list)  # ETS only
    hardware: list[str] = field(default_factory=list)  # the target each configuration was measured on
    lines: list[str] = field(default_factory=list)  # the architecture line of each (the manifest's arch)
    op_classes: ClassTimes = field(default_factory=ClassTimes)  # per-op-class times, models that predict per op
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (low, high) ms, models that give one
    unseen_shares: list[float] = field(default_factory=list)  # of each prediction's op time, on unseen ops

    @property
    def interval_coverage(self) -> float | None:
        """The share of measured step times inside their prediction interval (None: no intervals)."""
        if not self.intervals or len(self.intervals) != len(self.measured_ms):
            return None
        return float(np.mean([low <= m <= high for (low, high), m in zip(self.intervals, self.measured_ms)]))

    @property
    def step(self) -> Metrics:
        return Metrics.of(self.predicted_ms, self.measured_ms)

    @property
    def profiled(self) -> Metrics:
        return Metrics.of(self.predicted_profiled_ms, self.measured_profiled_ms)

    @property
    def latency_ms(self) -> float:
        """Prediction time per iteration, after featurisation."""
        return 1000 * self.predict_seconds / max(1, len(self.predicted_ms))

    def mre_by(self, groups: list[str]) -> dict[str, float]:
        """MRE against step_ms per group, ``groups`` naming each configuration's (its family, or its hardware)."""
        groups_array = np.array(groups)
        predicted, measured = np.array(self.predicted_ms), np.array(self.measured_ms)
        return {group: Metrics.of(predicted[groups_array == group], measured[groups_array == group]).mre
                for group in sorted(set(groups))}

    def family_mre(self) -> dict[str, float]:
        return self.mre_by(self.families)

    def record(self, samples: list[TraceSample], profiled_ms, unprofiled_ms) -> None:
        self.predicted_profiled_ms += [float(v) for v in profiled_ms]
        self.predicted_ms += [float(v) for v in unprofiled_ms]
        self.measured_ms += [s.config.step_ms for s in samples]
        self.measured_profiled_ms += [s.profiled_ns / 1e6 for s in samples]
        self.families += [s.config.family for s in samples]
        self.config_ids += [s.config.config_id for s in samples]
        self.models += [s.config.model for s in samples]
        self.hardware += [s.config.hardware for s in samples]
        self.lines += [s.config.line or s.config.model for s in samples]

    def only(self, config_ids) -> "ModelResult":
        """These predictions restricted to the given configurations (training is not repeated).

        ``predict_seconds`` is scaled to the share kept, so ``latency_ms`` stays per iteration.
        """
        keep = [i for i, config_id in enumerate(self.config_ids) if config_id in config_ids]
        pick = lambda values: [values[i] for i in keep] if values else []  # noqa: E731  (lines: absent in hand-made results)
        share = len(keep) / max(1, len(self.config_ids))
        return ModelResult(self.name, pick(self.predicted_ms), pick(self.predicted_profiled_ms),
                           pick(self.measured_ms), pick(self.measured_profiled_ms), pick(self.families),
                           pick(self.config_ids), pick(self.models), list(self.train_seconds), self.predict_seconds * share,
                           list(self.epochs), pick(self.hardware), pick(self.lines),
                           self.op_classes.only(set(config_ids)), pick(self.intervals), pick(self.unseen_shares))


def _by_hardware(samples: list[TraceSample]) -> dict[str, list[TraceSample]]:
    groups: dict[str, list[TraceSample]] = {}
    for sample in samples:
        groups.setdefault(sample.config.hardware, []).append(sample)
    return groups


def fit_for(name: str, settings: Settings, hardware: str, train_samples, fitted: dict | None = None,
            key=None):
    """``name``'s model fitted on ``train_samples``: an iteration-level model, or a HardwareModel. With
    ``fitted`` (a dict) and ``key`` (the fold and hardware), a HardwareModel that another model prices
    anew is fitted once and shared (the hybrid reuses lightgbm's)."""
    kind = WINDOW_MODELS[name]
    if kind.iteration_level:
        return new_model(name, settings).fit(train_samples)
    base = kind.fits_like or name
    if fitted is not None and (key, base) in fitted:
        model = fitted[(key, base)]
    else:
        calibration_folds = settings.calibration_folds if WINDOW_MODELS[base].predictor_model else None
        model = fit_hardware_model(hardware, train_samples, new_model(base, settings),
                                   calibration_folds=calibration_folds)
        if fitted is not None:
            fitted[(key, base)] = model
    if kind.anchor_weight is not None:
        model = replace(model, anchor_weight=kind.anchor_weight, anchor_slope=0.0)
    return model


def evaluate_model(name: str, settings: Settings, folds, samples, verbose: bool = False,
                   fitted: dict | None = None) -> ModelResult:
    """Trains one model per fold and hardware, predicts that fold's test samples. ``fitted``: models
    shared between evaluated models that price one fit differently (:func:`fit_for`)."""
    result = ModelResult(name)
    kind = WINDOW_MODELS[name]
    for k, (train, test) in enumerate(folds):
        tests = _by_hardware([samples[i] for i in test])
        for hardware, train_samples in sorted(_by_hardware([samples[i] for i in train]).items()):
            if hardware not in tests:
                continue
            model = fit_for(name, settings, hardware, train_samples, fitted, (k, hardware))
            start = time.perf_counter()
            if kind.predictor_model:
                priced = model.price(tests[hardware], kind.pricing)
                profiled_ms, unprofiled_ms = priced.profiled_ms, priced.unprofiled_ms
                if model.intervals.get(kind.pricing):
                    result.intervals += list(zip(priced.low_ms.tolist(), priced.high_ms.tolist()))
                result.unseen_shares += priced.unseen_share.tolist()
            else:
                profiled_ms, unprofiled_ms = model.predict_samples(tests[hardware])
            result.predict_seconds += time.perf_counter() - start
            result.record(tests[hardware], profiled_ms, unprofiled_ms)
            if kind.reports_op_classes:
                record_op_classes(result, model.window_model, tests[hardware])
            result.train_seconds.append(model.summary["train_seconds"])
            if kind.reports_epochs:
                result.epochs.append(model.window_model.epochs_done)
            if verbose:
                log.info(f"  fold {k + 1}/{len(folds)} {name}: trained in {model.summary['train_seconds']:.1f} s "
                     f"on {len(train_samples)} configurations")
    return result


def record_op_classes(result: ModelResult, window_model, samples: list[TraceSample]) -> None:
    """Adds the samples' measured and predicted op time per op class (a model that predicts each op)."""
    rows, predicted = window_model.predict_ops(samples)
    measured, predicted_by_class = measured_and_predicted(rows, predicted, samples)
    result.op_classes.add([s.config.config_id for s in samples], measured, predicted_by_class)


@dataclass
class Evaluation:
    """Every evaluated model's results, the Predictor's default model first (window_model.display_rank:
    the hybrid, then lightgbm, their variants, then the baselines in the order they were given): every
    table, the first model that ranks the worst lines, and the files written list them so."""

    settings: Settings
    configurations: int
    architectures: int
    test_sizes: list[int]
    results: list[ModelResult]
    scored_on: int | None = None  # set by only(): metrics over this many of the tested configurations
    # The labels' own repeatability (predict.dataset.LabelFloor), printed beside every MRE; None when the
    # collection has no repeat label pass.
    label_floor: LabelFloor | None = None

    def __post_init__(self):
        # sorted is stable: models of one rank keep the order they were given in
        self.results = sorted(self.results, key=lambda result: display_rank(result.name))

    def only(self, config_ids) -> "Evaluation":
        """The same evaluation scored only on the given configurations (e.g. an earlier collection's)."""
        config_ids = set(config_ids)
        results = [r.only(config_ids) for r in self.results]
        if not results or not results[0].config_ids:
            raise ItercastError("none of the given configurations was tested")
        kept = results[0]
        return Evaluation(self.settings, len(kept.config_ids), len(set(kept.models)), self.test_sizes,
                          results, scored_on=len(kept.config_ids), label_floor=self.label_floor)

    def floor_line(self) -> str:
        if self.label_floor is None:
            return ("label floor: not measured (one label pass; `itercast collect --label-passes 2` times each "
                    "label again and gives the error no model can be told apart below)")
        return self.label_floor.describe() + ": an MRE near it is within the labels' own noise"

    def group_floor(self, attribute: str, group: str) -> float | None:
        """The median label floor over the tested configurations of ``group`` (None without a floor)."""
        if self.label_floor is None or not self.results:
            return None
        first = self.results[0]
        errors = [self.label_floor.errors[config_id] for config_id, member in zip(first.config_ids, getattr(first, attribute))
                  if member == group and config_id in self.label_floor.errors]
        return float(np.median(errors)) if errors else None

    def table(self) -> str:
        s = self.settings
        how = f"holdout {s.test_fraction:.0%} of groups" if s.folds <= 1 else f"{s.folds} folds"
        if s.split == "test-on":
            how = "trained on one collection, tested on another"
        cells = [[r.name, f"{r.step.mre:.1%}", f"{r.step.rmse_ms:.2f}", f"{r.step.p90:.1%}", f"{r.profiled.mre:.1%}",
                  f"{r.profiled.rmse_ms:.2f}", f"{r.profiled.p90:.1%}", f"{np.mean(r.train_seconds):.1f}",
                  f"{r.latency_ms:.2f}"] for r in self.results]
        # every column as wide as its widest cell, so a long model name or a 1000x error keeps the figures
        # under their headings
        widths = [max([least] + [len(row[column]) for row in cells])
                  for column, least in enumerate((10, 8, 9, 8, 8, 9, 8, 8, 14))]

        def line(values) -> str:
            padded = [f"{values[0]:{widths[0]}}"] + [f"{value:>{width}}" for value, width in zip(values[1:], widths[1:])]
            return "  ".join([" ".join(padded[:4]), " ".join(padded[4:7]), " ".join(padded[7:])])

        def span(columns) -> int:  # a heading over several columns
            return sum(widths[c] for c in columns) + len(columns) - 1

        lines = [f"{self.configurations} configurations, {self.architectures} architectures; split by {s.split} "
                 f"({how}, seed {s.seed}); test configurations per fold: {self.test_sizes}"
                 + ("; scored on these configurations only" if self.scored_on is not None else ""),
                 f"{'':{widths[0]}} {'-- un-profiled step_ms --':>{span(range(1, 4))}}  "
                 f"{'-- profiled iteration --':>{span(range(4, 7))}}",
                 line(["model", "MRE", "RMSE ms", "p90 RE", "MRE", "RMSE ms", "p90 RE", "train s", "predict ms/it"])]
        lines += [line(row) for row in cells]
        lines.append(self.floor_line())
        lines.append("train s: mean per fitted model.")
        covered = [f"{r.name} {r.interval_coverage:.0%}" for r in self.results if r.interval_coverage is not None]
        if covered:
            lines.append("80% prediction interval holds the measured step: " + ", ".join(covered))
        unseen = [f"{r.name} {np.mean(r.unseen_shares):.1%}" for r in self.results if r.unseen_shares]
        if unseen:
            lines.append("op time on ops unseen in training (mean): " + ", ".join(unseen))
        for r in self.results:
            if r.epochs:
                lines.append(f"{r.name}: {', '.join(f'{e:.2f}' for e in r.epochs)} epochs in a "
                             f"{round(s.ets_seconds, 2):g} s budget per fold")
        return "\n".join(lines)

    def group_rows(self, column: str) -> list[dict]:
        """Per family (``column`` "family") or target hardware ("hardware"): test configurations and each
        model's MRE against step_ms."""
        attribute = {"family": "families", "hardware": "hardware", "line": "lines"}[column]
        per_model = {r.name: r.mre_by(getattr(r, attribute)) for r in self.results}
        groups = getattr(self.results[0], attribute) if self.results else []
        return [{column: group, "configurations": groups.count(group),
                 **{name: mre[group] for name, mre in per_model.items()},
                 **({"label floor": self.group_floor(attribute, group)} if self.label_floor else {})}
                for group in sorted(set(groups))]

    def family_rows(self) -> list[dict]:
        return self.group_rows("family")

    def group_table(self, column: str) -> str:
        """Per group, each model's MRE and, where the collection has a repeat label pass, the group's
        label floor (its configurations' median)."""
        names = [r.name for r in self.results] + (["label floor"] if self.label_floor else [])
        rows = self.group_rows(column)

        def cell(value) -> str:
            return "-" if value is None else f"{value:.1%}"

        width = max([24] + [len(row[column]) for row in rows])
        widths = [max([9, len(n)] + [len(cell(row[n])) for row in rows]) for n in names]
        lines = [f"{column + ' (MRE vs step_ms)':{width}} {'n':>4} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths))]
        for row in rows:
            lines.append(f"{row[column]:{width}} {row['configurations']:4d} "
                         + " ".join(f"{cell(row[n]):>{w}}" for n, w in zip(names, widths)))
        return "\n".join(lines)

    def family_table(self) -> str:
        return self.group_table("family")

    def line_rows(self) -> list[dict]:
        """Per architecture line, worst first by the first model's MRE."""
        rows = self.group_rows("line")
        first = self.results[0].name if self.results else None
        return sorted(rows, key=lambda row: -row[first]) if first else rows

    def line_table(self, limit: int | None = 12) -> str:
        """The ``limit`` worst lines (all with None), by the first model's MRE against step_ms."""
        shown = self.line_rows()[:limit]
        table = self.group_table("line").splitlines()
        by_name = {line.split()[0]: line for line in table[1:]}
        worst = f"worst {len(shown)} of {len(self.line_rows())} lines by {self.results[0].name}" if shown else ""
        return "\n".join([table[0] + "   " + worst] + [by_name[row["line"]] for row in shown])

    def op_class_tables(self, limit: int | None = 10) -> str:
        """Per model that predicts per op: its per-op-class table (predict.op_classes)."""
        return "\n\n".join(class_table(r.name, r.op_classes, limit) for r in self.results if r.op_classes)

    def hardware_table(self) -> str | None:
        """Per target hardware, when the evaluation spans more than one (None otherwise)."""
        targets = set(self.results[0].hardware) if self.results else set()
        return self.group_table("hardware") if len(targets) > 1 else None

    def write_family_csv(self, path: str | Path) -> None:
        rows = self.family_rows()
        with open(path, "w", newline="") as handle:
            floor = ["label floor"] if self.label_floor else []
            writer = csv.DictWriter(handle, fieldnames=["family", "configurations"] + [r.name for r in self.results] + floor)
            writer.writeheader()
            writer.writerows(rows)

    def write_predictions_csv(self, path: str | Path, configs) -> None:
        """One row per tested configuration: what it is (from ``configs``, the dataset's), its measured
        un-profiled step time and every model's held-out prediction of it."""
        by_id = {config.config_id: config for config in configs}
        predicted = {r.name: dict(zip(r.config_ids, r.predicted_ms)) for r in self.results}
        first = self.results[0]
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(PREDICTION_COLUMNS + tuple(PREDICTED_PREFIX + r.name for r in self.results))
            for config_id, measured in zip(first.config_ids, first.measured_ms):
                config = by_id[config_id]
                writer.writerow([config_id, config.model, config.line, config.family, config.hardware,
                                 config.batch_size, f"{measured:.6g}"]
                                + [f"{predicted[r.name][config_id]:.6g}" for r in self.results])

    def write_plot(self, path: str | Path) -> None:
        """Predicted vs measured, log-log, one colour per model; left un-profiled, right profiled."""
        import matplotlib.pyplot as plt

        figure = self.plot()
        figure.savefig(path, dpi=120)
        plt.close(figure)

    def plot(self):
        """The figure :meth:`write_plot` saves."""
        require("plot")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(1, 2, figsize=(12, 5.5))
        panels = (("predicted_ms", "measured_ms", "un-profiled step_ms"),
                  ("predicted_profiled_ms", "measured_profiled_ms", "profiled iteration"))
        for axis, (predicted, measured, label) in zip(axes, panels):
            values = []
            for r in self.results:
                x, y = np.array(getattr(r, measured)), np.array(getattr(r, predicted))
                shown = y > 0  # a log axis cannot show the rest; the legend counts them
                hidden = f" ({(~shown).sum()} <= 0 not shown)" if (~shown).any() else ""
                axis.scatter(x[shown], y[shown], s=10, alpha=0.6, label=r.name + hidden)
                values += [x, y[shown]]
            everything = np.concatenate(values)
            low, high = everything.min(), everything.max()
            axis.plot([low, high], [low, high], color="black", linewidth=1, label="y = x")
            axis.set(xscale="log", yscale="log", xlabel=f"measured {label} (ms)",
                     ylabel=f"predicted {label} (ms)", title=f"split by {self.settings.split}: {label}")
            label_log_ticks_sparsely(axis)
            axis.legend(fontsize=8)
        figure.tight_layout()
        return figure

    def to_dict(self) -> dict:
        def metrics(m: Metrics) -> dict:
            return {"mre": m.mre, "rmse_ms": m.rmse_ms, "p90": m.p90}

        return {"split": self.settings.split, "folds": self.settings.folds, "seed": self.settings.seed,
                "configurations": self.configurations, "architectures": self.architectures,
                "test_sizes": self.test_sizes,
                "models": {r.name: {"step_ms": metrics(r.step), "profiled": metrics(r.profiled),
                                    "interval_coverage": r.interval_coverage,
                                    "unseen_share": float(np.mean(r.unseen_shares)) if r.unseen_shares else None,
                                    "train_seconds": r.train_seconds, "latency_ms": r.latency_ms,
                                    "epochs": r.epochs, "family_mre": r.family_mre(),
                                    "op_classes": class_rows(r.op_classes)}
                           for r in self.results},
                "lines": self.line_rows(),
                "families": self.family_rows(), "hardware": self.group_rows("hardware"),
                "label_floor": None if self.label_floor is None else {
                    "median": self.label_floor.median, "mean": self.label_floor.mean, "p90": self.label_floor.p90,
                    "configs": self.label_floor.configs, "unrepeated": self.label_floor.unrepeated}}


def label_log_ticks_sparsely(axis, most: int = 7) -> None:
    """At most ``most`` labelled ticks on each log axis, written as plain numbers: left alone, matplotlib
    labels a log axis' minor ticks when it spans about a decade, and those labels run into each other."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    axis.autoscale_view()
    for side, (low, high) in ((axis.xaxis, axis.get_xlim()), (axis.yaxis, axis.get_ylim())):
        side.set_major_locator(FixedLocator(sparse_log_ticks(low, high, most)))
        side.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        side.set_minor_formatter(NullFormatter())


def sparse_log_ticks(low: float, high: float, most: int) -> list[float]:
    """Ticks within [low, high]: 1-2-5 per decade; 1 to 9 where that gives under three, and evenly spaced
    ones where even that gives under two; decades only, then every n-th decade, where those are too many."""
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)

    def ticks_at(mantissas) -> list[float]:
        return [m * 10.0 ** d for d in decades for m in mantissas if low <= m * 10.0 ** d <= high]

    if len(ticks_at(range(1, 10))) < 2:  # a span under 2x: evenly spaced ticks, as on a linear axis
        from matplotlib.ticker import MaxNLocator

        return [tick for tick in MaxNLocator(nbins=most - 1).tick_values(low, high) if low <= tick <= high]
    ticks = ticks_at((1, 2, 5))
    if len(ticks) < 3 and len(ticks_at(range(1, 10))) <= most:
        return ticks_at(range(1, 10))
    for mantissas in ((1, 2, 5), (1,)):
        ticks = ticks_at(mantissas)
        if len(ticks) <= most:
            return ticks
    stride = math.ceil(len(ticks) / most)
    return ticks[::stride]


def evaluate(samples: list[TraceSample], settings: Settings, verbose: bool = False,
             repeat: Dataset | None = None, folds=None, label_floor: LabelFloor | None = None) -> Evaluation:
    """Every model of ``settings`` on the same folds (``folds``: (train, test) index arrays, else made by
    ``settings``' split). With ``repeat`` (another collection of the same configurations), a "repeat" row
    is added (:func:`repeat_result`) and every model is scored on the configurations both collections
    have. ``label_floor``: the collection's (Dataset.label_floor), shown beside the errors."""
    for name in settings.models:
        new_model(name, settings)  # an unknown name or a missing package fails before any training
        require(name)
    if repeat is not None and not {c.config_id for c in repeat.configs} & {s.config.config_id for s in samples}:
        raise ItercastError(f"{repeat.source}: no configuration in common with the evaluated collection")
    if folds is None:
        folds = split_folds(samples, settings.split, settings.folds, settings.seed, settings.test_fraction)
    fitted: dict = {}
    results = [evaluate_model(name, settings, folds, samples, verbose, fitted) for name in settings.models]
    evaluation = Evaluation(settings, len(samples), len({s.config.model for s in samples}),
                            [len(test) for _, test in folds], results, label_floor=label_floor)
    if repeat is None:
        return evaluation
    evaluation.results.append(repeat_result(samples, folds, repeat))
    return evaluation.only(config.config_id for config in repeat.configs)


def repeat_result(samples: list[TraceSample], folds, repeat: Dataset) -> ModelResult:
    """Diagnostic, not a model: each test configuration's label in ``repeat``, another collection of the
    same configurations made at another time, times the machine's drift between the two (the median
    ratio of the labels over the fold's training configurations that both have; 1 where none).

    How far a configuration's own measurement, taken again on the same machine, misses its label: the
    labels' repeatability, which no model judged against one collection can be expected to beat.
    Only configurations that ``repeat`` has are predicted.
    """
    again = {config.config_id: config for config in repeat.configs}
    result = ModelResult("repeat")
    for train, test in folds:
        step_drift, profiled_drift = _drift([samples[i] for i in train], again)
        tested = [samples[i] for i in test if samples[i].config.config_id in again]
        if not tested:
            continue
        repeated = [again[s.config.config_id] for s in tested]
        result.record(tested, [c.profiled_step_ms * profiled_drift for c in repeated],
                      [c.step_ms * step_drift for c in repeated])
        result.train_seconds.append(0.0)
    return result


def _drift(samples: list[TraceSample], again: dict) -> tuple[float, float]:
    """Median ratio of these samples' (un-profiled, profiled) labels to their labels in ``again`` (all
    positive: Dataset.from_manifest refuses others)."""
    pairs = [(s, again[s.config.config_id]) for s in samples if s.config.config_id in again]
    if not pairs:
        return 1.0, 1.0
    return (float(np.median([s.config.step_ms / c.step_ms for s, c in pairs])),
            float(np.median([s.profiled_ns / 1e6 / c.profiled_step_ms for s, c in pairs])))


def limit_configs(dataset: Dataset, count: int | None, seed: int = 0) -> Dataset:
    """A seeded random subset of ``count`` configurations (all of them when None)."""
    if count is None or count >= len(dataset):
        return dataset
    keep = np.sort(np.random.default_rng(seed).choice(len(dataset), size=count, replace=False))
    return replace(dataset, configs=[dataset.configs[i] for i in keep])


def trace_file_stamp(path: Path) -> tuple[int, int]:
    """(size, modification time in ns) of a trace file, (-1, -1) when it is missing (featurising then says so)."""
    try:
        status = Path(path).stat()
    except OSError:
        return -1, -1
    return status.st_size, status.st_mtime_ns


def load_samples(dataset: Dataset, cache: str | Path | None = None) -> list[TraceSample]:
    """Featurised samples of the dataset, read from (and written to) a pickle cache when given.

    The cache is keyed by config id, trace path and the trace file's size and modification time (a
    configuration collected again into the same directory is featurised again); any configuration it lacks
    re-featurises all. Samples read from it carry the dataset's configurations, so relabelled rows count as
    relabelled (and their times are divided by those configurations' slowdowns).
    """
    from itercast.timeline import FEATURE_SCHEMA_VERSION

    wanted = [(c.config_id, str(c.trace_path), *trace_file_stamp(c.trace_path)) for c in dataset.configs]
    if cache is not None and Path(cache).exists():
        with open(cache, "rb") as handle:
            stored = pickle.load(handle)
        current = stored.get("feature_schema") == FEATURE_SCHEMA_VERSION and stored.get("sample_version") == SAMPLE_VERSION
        if current and all(k in stored["samples"] for k in wanted):
            return [stored["samples"][k].with_config(c) for k, c in zip(wanted, dataset.configs)]
    samples = featurise(dataset.configs)
    if cache is not None:
        with open(cache, "wb") as handle:
            pickle.dump({"feature_schema": FEATURE_SCHEMA_VERSION, "sample_version": SAMPLE_VERSION,
                         "samples": dict(zip(wanted, samples))},
                        handle, protocol=pickle.HIGHEST_PROTOCOL)
    return samples
