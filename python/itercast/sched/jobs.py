"""Jobs with real model configurations: the join between the iteration-time
predictor and the scheduler.

Each job of a trace is given a configuration of a collected dataset (model,
batch size, hardware), that configuration's measured iteration time, and the
iteration times that estimators which never saw its architecture predicted
for it (`itercast evaluate --folds K --predictions-csv FILE`). A job's work is
a number of iterations; its duration estimate under an estimator is
iterations x that estimator's iteration time.

Philly and Helios jobs keep their GPU count and duration (iterations =
duration / measured iteration time), and draw their configuration uniformly
at random (seeded) from the dataset. Sia-style jobs (`name, time,
application, num_replicas, batch_size`) carry no duration: each application
is mapped to the zoo model closest to it (``SIA_APPLICATIONS``) and given a
work amount of ``epochs`` passes over its dataset (documented there), at the
job's global batch size split over its replicas. With ``sia_models="family"``
each job instead runs a model drawn (seeded) from its application's zoo
family, so that the jobs of one application differ as a real cluster's do.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np

from itercast.collect.manifest import work_id
from itercast.errors import ItercastError
from itercast.predict.evaluate import PREDICTED_PREFIX, PREDICTION_COLUMNS
from itercast.sched.streams import stream
from itercast.sim.loaders import DEADLINE_COLUMN, ESTIMATE_COLUMN, load_workload
from itercast.sim.workload import Workload

ORACLE = "oracle"
# `itercast evaluate --models ...,oracle` writes its diagnostic (each trace's own measured op times through
# the predictor's head/tail and reconciliation) as predicted_ms:oracle; as an estimator it goes by this name,
# so that it cannot stand in for the true durations.
OP_TIME_ORACLE = "op-time oracle"
# ETS's scheduling study fed SRTF estimates "X% accurate": the true duration
# times a factor uniform in [X, 2 - X] (REFERENCES.md).
SYNTHETIC_ACCURACIES = (0.90, 0.75, 0.50, 0.25)
ESTIMATE_PREFIX = ESTIMATE_COLUMN + ":"  # per-estimator columns of a configured workload CSV
# A job without a deadline of its own must finish within this many times its duration after its
# submission (uniform, seeded): tight enough that a queueing cluster makes some jobs late.
DEADLINE_SLACK = (1.5, 3.0)
# Columns a configured workload CSV adds to the Helios schema it is written in.
JOB_COLUMNS = ("config_id", "model", "batch_size", "iterations", "iteration_ms")


def synthetic_name(accuracy: float) -> str:
    return f"{accuracy:.0%} accurate"


@dataclass(frozen=True)
class SiaApplication:
    """How a Sia application becomes zoo work: its closest zoo model, the samples it trains on
    (``epochs`` passes over a dataset of ``samples``), and the zoo family of its kind of model."""

    model: str
    samples: int
    epochs: float
    family: str


# Sia's applications and the zoo model each is closest to, with the public
# dataset sizes they train on. The epoch counts are this project's choice
# (Sia's files carry no work amount): they keep the applications' usual order
# of size (CIFAR-10 jobs the small ones, BERT fine-tuning and DeepSpeech2
# medium, YOLOv3 large, ImageNet the largest) on the zoo's iteration times.
SIA_APPLICATIONS = {
    "cifar10": SiaApplication("resnet18", 50_000, 20, "cnn"),                 # ResNet-18, CIFAR-10
    "bert": SiaApplication("bert_medium", 88_641, 8, "transformer-encoder"),  # BERT fine-tuning, SQuAD v1.1
    "deepspeech2": SiaApplication("gru_512x2", 28_539, 40, "rnn"),            # GRU speech model, LibriSpeech-100h
    "yolov3": SiaApplication("resnet50", 16_551, 60, "cnn"),                  # Darknet-53 ~ ResNet-50, PASCAL VOC
    "imagenet": SiaApplication("resnet50", 1_281_167, 2, "cnn"),              # ResNet-50, ImageNet-1k
}
# Which zoo model a Sia job runs: its application's closest ("closest"), or one drawn uniformly from the
# dataset's models of the application's family ("family").
SIA_MODEL_CHOICES = ("closest", "family")


@dataclass(frozen=True)
class IterationTimes:
    """Configurations of a collection with their measured iteration time and
    each estimator's held-out prediction of it (ms)."""

    config_id: np.ndarray
    model: np.ndarray
    line: np.ndarray
    family: np.ndarray
    hardware: np.ndarray
    batch_size: np.ndarray
    measured_ms: np.ndarray
    predicted_ms: dict  # estimator -> array
    source: str = "<memory>"

    def __len__(self) -> int:
        return len(self.config_id)

    @property
    def estimators(self) -> tuple[str, ...]:
        return tuple(self.predicted_ms)

    @classmethod
    def read(cls, path) -> "IterationTimes":
        path = Path(path)
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [column for column in PREDICTION_COLUMNS if column not in header]
            if missing:
                raise ItercastError(f"{path}:1: not a predictions CSV (no column {', '.join(missing)}); "
                                    "write one with itercast evaluate --folds K --predictions-csv FILE")
            columns = [column for column in header if column.startswith(PREDICTED_PREFIX)]
            rows = list(reader)
        if not rows:
            raise ItercastError(f"{path}: no configurations")
        numbers = {column: _positive_column(rows, column, path) for column in ["measured_ms", "batch_size", *columns]}
        text = {column: np.array([row[column] for row in rows], dtype=object)
                for column in ("config_id", "model", "line", "family", "hardware")}
        return cls(text["config_id"], text["model"], text["line"], text["family"], text["hardware"],
                   numbers["batch_size"].astype(np.int64), numbers["measured_ms"],
                   {_estimator_name(column): numbers[column] for column in columns}, str(path))

    def on(self, hardware: str) -> "IterationTimes":
        """The configurations measured on one hardware target: its key, or a part of the key that
        names one target alone."""
        targets = sorted(set(self.hardware))
        matches = [key for key in targets if key == hardware] or [key for key in targets if hardware in key]
        if len(matches) != 1:
            what = "no" if not matches else "more than one"
            raise ItercastError(f"{self.source}: {what} hardware target matches {hardware!r} "
                                f"(has {', '.join(targets)})")
        return self.take(np.flatnonzero(self.hardware == matches[0]))

    def aligned(self, hardware=None) -> list:
        """One table per hardware target named (default: the only one), restricted to the work measured
        on all of them and in the same order, so that row k is the same model, batch and input everywhere."""
        if not hardware:
            targets = sorted(set(self.hardware))
            if len(targets) > 1:
                raise ItercastError(f"{self.source}: several hardware targets ({', '.join(targets)}); name them")
            return [self]
        tables = [self.on(target) for target in hardware]
        rows = [table._rows_by_work() for table in tables]
        common = set.intersection(*(set(where) for where in rows))
        if not common:
            raise ItercastError(f"{self.source}: no configuration measured on every one of {', '.join(hardware)}")
        order = sorted(common)
        return [table.take([where[work] for work in order]) for table, where in zip(tables, rows)]

    def _rows_by_work(self) -> dict:
        """Work id -> row; two configurations of one hardware target doing the same work cannot be
        matched across targets, and are an error."""
        rows = {}
        for row, config in enumerate(self.config_id):
            work = work_id(config)
            if work in rows:
                raise ItercastError(f"{self.source}: configurations {self.config_id[rows[work]]} and {config} on "
                                    f"{self.hardware[row]} are the same work ({work}); the targets cannot be "
                                    "matched row by row")
            rows[work] = row
        return rows

    @classmethod
    def combine(cls, tables: list["IterationTimes"]) -> "IterationTimes":
        """Several predictions files as one (e.g. one per hardware target), with the estimators all of them
        have; a configuration on the same hardware in two of them is an error."""
        if len(tables) == 1:
            return tables[0]
        names = [name for name in tables[0].predicted_ms if all(name in table.predicted_ms for table in tables)]

        def joined(field: str) -> np.ndarray:
            return np.concatenate([getattr(table, field) for table in tables])

        keys, counts = np.unique([f"{config} on {hardware}" for config, hardware in
                                  zip(joined("config_id"), joined("hardware"))], return_counts=True)
        if (counts > 1).any():
            raise ItercastError(f"configuration {keys[counts > 1][0]} is in more than one of "
                                f"{', '.join(table.source for table in tables)}")
        return cls(joined("config_id"), joined("model"), joined("line"), joined("family"), joined("hardware"),
                   joined("batch_size"), joined("measured_ms"),
                   {name: np.concatenate([table.predicted_ms[name] for table in tables]) for name in names},
                   " + ".join(table.source for table in tables))

    def take(self, rows) -> "IterationTimes":
        rows = np.asarray(rows, dtype=np.int64)
        return IterationTimes(self.config_id[rows], self.model[rows], self.line[rows], self.family[rows],
                              self.hardware[rows], self.batch_size[rows], self.measured_ms[rows],
                              {name: values[rows] for name, values in self.predicted_ms.items()}, self.source)

    def mre(self) -> dict[str, float]:
        """Each estimator's mean relative error of the iteration time over these configurations."""
        return {name: float(np.mean(np.abs(values / self.measured_ms - 1)))
                for name, values in self.predicted_ms.items()}


def _positive_column(rows: list[dict], column: str, path: Path) -> np.ndarray:
    values = np.empty(len(rows))
    for index, row in enumerate(rows):
        text = row.get(column) or ""
        try:
            values[index] = float(text)
        except ValueError:
            raise ItercastError(f"{path}:{index + 2}: {column} {text!r} is not a number") from None
        if not np.isfinite(values[index]) or values[index] <= 0:
            raise ItercastError(f"{path}:{index + 2}: {column} must be positive, got {text}")
    return values


@dataclass(frozen=True)
class ConfiguredJobs:
    """A workload whose jobs run configurations of a dataset, with every estimator's duration estimates.

    With several hardware targets (``tables``, aligned row by row on the same work), each is a GPU type of
    the workload: durations and every estimator's estimates are jobs x types."""

    workload: Workload
    config_index: np.ndarray  # into each of ``tables``
    iterations: np.ndarray
    estimates: dict  # estimator -> seconds, jobs x GPU types
    tables: tuple  # IterationTimes per GPU type, aligned

    @property
    def times(self) -> IterationTimes:
        return self.tables[0]

    def with_estimator(self, name: str) -> Workload:
        """The workload whose supplied estimates are this estimator's (per type, when there are several)."""
        if name not in self.estimates:
            raise ItercastError(f"no estimator {name!r}; have {', '.join(self.estimates)}")
        per_type = self.estimates[name]
        return replace(self.workload, estimates=per_type.min(axis=1),
                       type_estimates=per_type if per_type.shape[1] > 1 else None)

    def write_csv(self, path, estimator: Optional[str] = None) -> None:
        """A Helios-schema workload CSV that `itercast sim` and `itercast autosched` read: every estimator's
        estimates as `estimated_duration:<name>` (read with `--estimator NAME`), ``estimator``'s also as
        `estimated_duration` (none without one), and the configuration each job runs. The oracle's
        estimates are the `duration` column, never an estimate column. With several GPU types, the
        duration and estimates are the first type's; `duration:<type>` columns give the others'
        durations for reference (the simulator reads one GPU type from a CSV)."""
        if estimator == ORACLE:
            raise ItercastError("the oracle's estimates are the true durations: written as the duration column, "
                                "not as estimated_duration")
        if estimator is not None and estimator not in self.estimates:
            raise ItercastError(f"no estimator {estimator!r} to write as {ESTIMATE_COLUMN}; "
                                f"have {', '.join(self.estimates)}")
        workload, times = self.workload, self.times
        supplied = [estimator] if estimator is not None else []
        named = [name for name in self.estimates if name != ORACLE]
        types = workload.gpu_types
        vcs = workload.virtual_cluster if workload.virtual_cluster is not None else np.full(len(workload), "")
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["job_id", "vc", "gpu_num", "submit_time", "duration",
                             *(ESTIMATE_COLUMN for _ in supplied), DEADLINE_COLUMN, *JOB_COLUMNS,
                             *(ESTIMATE_PREFIX + name for name in named), *(f"duration:{gpu}" for gpu in types[1:])])
            for i in range(len(workload)):
                k = self.config_index[i]
                writer.writerow([workload.job_ids[i], vcs[i], int(workload.gpus[i]), f"{workload.submit[i]:.3f}",
                                 f"{workload.durations[i, 0]:.3f}",
                                 *(f"{self.estimates[name][i, 0]:.3f}" for name in supplied),
                                 f"{workload.deadlines[i]:.3f}",
                                 times.config_id[k], times.model[k], int(times.batch_size[k]),
                                 f"{self.iterations[i]:.1f}", f"{1000 * workload.durations[i, 0] / self.iterations[i]:.6g}",
                                 *(f"{self.estimates[name][i, 0]:.3f}" for name in named),
                                 *(f"{workload.durations[i, t]:.3f}" for t in range(1, len(types)))])


def _estimator_name(column: str) -> str:
    name = column[len(PREDICTED_PREFIX):]
    return OP_TIME_ORACLE if name == ORACLE else name


def _estimates(durations: np.ndarray, config_index: np.ndarray, tables, seed: int) -> dict:
    """Seconds per job and type under every estimator: oracle, each model of the predictions file (the
    duration scaled by its predicted / measured iteration time there), and ETS's synthetic accuracy
    levels (one factor per job, on every type)."""
    estimates = {ORACLE: durations.copy()}
    for name in tables[0].estimators:
        ratio = np.column_stack([(table.predicted_ms[name] / table.measured_ms)[config_index] for table in tables])
        estimates[name] = durations * ratio
    rng = stream(seed, "estimates")
    for accuracy in SYNTHETIC_ACCURACIES:
        factor = rng.uniform(accuracy, 2 - accuracy, size=len(durations))
        estimates[synthetic_name(accuracy)] = durations * factor[:, None]
    return estimates


def _with_deadlines(workload: Workload, seed: int) -> Workload:
    """Keeps the workload's deadlines; gives the jobs without one submit + slack x duration."""
    slack = stream(seed, "deadlines").uniform(*DEADLINE_SLACK, size=len(workload))
    drawn = workload.submit + slack * workload.duration
    given = workload.deadlines
    return replace(workload, deadlines=drawn if given is None else np.where(np.isnan(given), drawn, given))


def _configured(workload: Workload, config_index, iterations, durations: np.ndarray, tables,
                seed: int) -> ConfiguredJobs:
    """``durations``: jobs x types, measured."""
    workload = replace(workload, durations=durations, gpu_types=tuple(table.hardware[0] for table in tables)
                       if len(tables) > 1 else workload.gpu_types)
    return ConfiguredJobs(_with_deadlines(workload, seed), config_index, iterations,
                          _estimates(durations, config_index, tables, seed), tuple(tables))


def configure_trace(workload: Workload, times: IterationTimes, seed: int = 0, hardware=None) -> ConfiguredJobs:
    """Philly/Helios/Tiresias jobs: each keeps its GPU count and duration (on the first of ``hardware``)
    and runs a configuration drawn uniformly (seeded) from ``times``; iterations = duration / measured
    iteration time. With several ``hardware`` targets, the configurations measured on all of them,
    each target a GPU type."""
    tables = times.aligned(hardware)
    config_index = stream(seed, "configurations").integers(0, len(tables[0]), size=len(workload))
    measured_s = np.column_stack([table.measured_ms[config_index] / 1000 for table in tables])
    iterations = workload.duration / measured_s[:, 0]
    durations = workload.duration[:, None] * (measured_s / measured_s[:, :1])  # the first type's exactly
    return _configured(workload, config_index, iterations, durations, tables, seed)


def read_sia(path) -> list[dict]:
    """Rows of a Sia-style workload (`name, time, application, num_replicas, batch_size`), validated."""
    path = Path(path)
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        needed = ("name", "time", "application", "num_replicas", "batch_size")
        missing = [column for column in needed if column not in (reader.fieldnames or [])]
        if missing:
            raise ItercastError(f"{path}:1: not a Sia workload (no column {', '.join(missing)})")
        rows = []
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if row["application"] not in SIA_APPLICATIONS:
                raise ItercastError(f"{where}: unknown application {row['application']!r} "
                                    f"(known: {', '.join(SIA_APPLICATIONS)})")
            try:
                parsed = {"name": row["name"], "time": float(row["time"]), "application": row["application"],
                          "replicas": int(row["num_replicas"]), "batch_size": int(row["batch_size"])}
            except ValueError as error:
                raise ItercastError(f"{where}: {error}") from None
            if parsed["replicas"] <= 0 or parsed["batch_size"] <= 0:
                raise ItercastError(f"{where}: num_replicas and batch_size must be positive")
            rows.append(parsed)
    if not rows:
        raise ItercastError(f"{path}: no jobs")
    return rows


def _closest_config(times: IterationTimes, model: str, batch_per_replica: float) -> int:
    """The configuration of ``model`` whose batch size is closest (in log) to the replica's batch,
    the slowest (largest input) when several share that batch size."""
    candidates = np.flatnonzero(times.model == model)
    if len(candidates) == 0:
        raise ItercastError(f"{times.source}: no configuration of zoo model {model!r}, which a Sia application "
                            "maps to; collect it (itercast collect --models ...)")
    distance = np.abs(np.log(times.batch_size[candidates] / batch_per_replica))
    best = candidates[distance == distance.min()]
    return int(best[np.argmax(times.measured_ms[best])])


def _sia_model_choice(times: IterationTimes, choice: str, seed: int):
    """application -> the zoo model a job of it runs (see ``SIA_MODEL_CHOICES``)."""
    if choice == "closest":
        return lambda application: application.model
    if choice != "family":
        raise ItercastError(f"unknown Sia model choice {choice!r} (known: {', '.join(SIA_MODEL_CHOICES)})")
    rng = stream(seed, "sia models")

    def draw(application: SiaApplication) -> str:
        models = sorted(set(times.model[times.family == application.family]))
        if not models:
            raise ItercastError(f"{times.source}: no model of zoo family {application.family!r}, which a Sia "
                                "application draws from; collect one (itercast collect --models ...)")
        return models[rng.integers(len(models))]

    return draw


def configure_sia(path, times: IterationTimes, seed: int = 0, hardware=None,
                  models: str = "closest") -> ConfiguredJobs:
    """A Sia-style workload as jobs: each application's closest zoo model (``models="family"``: a model
    drawn from its family per job) at the configuration whose batch is nearest the per-replica batch,
    its iteration time scaled linearly to that batch, and ``epochs x samples / batch_size`` iterations."""
    rows = read_sia(path)
    tables = times.aligned(hardware)
    model_for = _sia_model_choice(tables[0], models, seed)
    config_index = np.empty(len(rows), dtype=np.int64)
    per_iteration_s = np.empty((len(rows), len(tables)))
    iterations = np.empty(len(rows))
    for i, row in enumerate(rows):
        application = SIA_APPLICATIONS[row["application"]]
        per_replica = row["batch_size"] / row["replicas"]
        k = _closest_config(tables[0], model_for(application), per_replica)
        config_index[i] = k
        per_iteration_s[i] = [table.measured_ms[k] / 1000 * per_replica / table.batch_size[k] for table in tables]
        iterations[i] = application.epochs * application.samples / row["batch_size"]
    workload = Workload(
        job_ids=np.array([row["name"] for row in rows], dtype=object),
        submit=np.array([row["time"] for row in rows]),
        gpus=np.array([row["replicas"] for row in rows], dtype=np.int64),
        durations=np.ones((len(rows), 1)),
        virtual_cluster=np.array([row["application"] for row in rows], dtype=object),
        lines=np.arange(2, len(rows) + 2), source=str(path))
    return _configured(workload, config_index, iterations, iterations[:, None] * per_iteration_s, tables, seed)


def is_sia(path) -> bool:
    with open(path, newline="") as handle:
        header = next(csv.reader(handle), [])
    return "application" in header and "num_replicas" in header


def configure(path, times: IterationTimes, seed: int = 0, start: float | None = None, end: float | None = None,
              virtual_clusters=None, hardware=None, sia_models: str = "closest") -> ConfiguredJobs:
    """Any workload file: Sia-style by its header, else a trace read by ``load_workload``, kept to
    jobs submitted in [start, end) of the given virtual clusters."""
    if is_sia(path):
        if virtual_clusters or start is not None or end is not None:
            raise ItercastError(f"{path}: a Sia workload is taken whole (no time window or virtual clusters)")
        return configure_sia(path, times, seed, hardware, sia_models)
    if sia_models != "closest":
        raise ItercastError(f"{path}: not a Sia workload; its jobs draw from the whole dataset "
                            f"(no Sia model choice {sia_models!r})")
    workload = load_workload(path, start=start, end=end)
    if virtual_clusters:
        if workload.virtual_cluster is None:
            raise ItercastError(f"{path}: virtual clusters named, but the workload has none")
        workload = workload.subset(np.isin(workload.virtual_cluster, list(virtual_clusters)))
        if len(workload) == 0:
            raise ItercastError(f"{path}: no job in virtual cluster(s) {', '.join(virtual_clusters)}")
    return configure_trace(workload, times, seed, hardware)
