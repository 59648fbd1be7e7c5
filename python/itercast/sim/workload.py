"""A workload: the jobs to replay, as columns (numpy arrays), plus the rows of
the source file that were rejected and why."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Union

import numpy as np

from itercast.sim.cluster import DEFAULT_GPU_TYPE
from itercast.sim.errors import WorkloadError

PerType = Union[float, Mapping[str, float]]

# Optional columns that describe a cluster already in progress (docs/sim.md,
# "Online use"); a value NaN (or a missing column) means a fresh job.
LIVE_COLUMNS = (
    "attained_gpu_s", "done_fraction", "remaining_s", "running", "service_since_promotion_gpu_s",
    "held_since_promotion_s", "queue_entry_s", "pending_since_s", "first_start_s",
    "work_start_s", "last_start_s",
)
# What a missing column stands for when workloads with and without it are
# joined; a column not named here (line numbers, estimates) is kept only when
# every part has it.
_FILL = {**{name: np.nan for name in LIVE_COLUMNS},
         "attained_gpu_s": 0.0, "done_fraction": 0.0, "running": False, "virtual_cluster": "",
         "placement": None, "tiresias_queue": 0, "deadlines": np.nan}
_PER_TYPE_COLUMNS = ("type_estimates",)  # jobs x GPU types, like durations
_JOB_COLUMNS = ("job_ids", "submit", "gpus", "virtual_cluster", "lines", "estimates", "deadlines", "placement",
                "tiresias_queue", *LIVE_COLUMNS, "type_estimates")


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


@dataclass(frozen=True)
class JobSpec:
    """One job for ``Workload.from_jobs``: either ``duration_s`` or
    ``iterations`` x ``iteration_time_s``; a plain number applies to the
    default GPU type, a mapping gives one value per GPU type."""

    job_id: str
    submit_s: float
    gpus: int
    duration_s: Optional[PerType] = None
    iterations: Optional[int] = None
    iteration_time_s: Optional[PerType] = None
    estimate_s: Optional[float] = None
    virtual_cluster: str = ""

    def durations(self) -> dict[str, float]:
        if (self.duration_s is None) == (self.iterations is None or self.iteration_time_s is None):
            raise WorkloadError(f"job {self.job_id}: give either duration_s or iterations and iteration_time_s")
        if self.duration_s is not None:
            return _per_type(self.duration_s)
        return {gpu: self.iterations * seconds for gpu, seconds in _per_type(self.iteration_time_s).items()}


def _filled(values: Optional[np.ndarray], n: int, fill) -> np.ndarray:
    if values is not None:
        return values
    if fill is None or isinstance(fill, str):
        column = np.empty(n, dtype=object)
        column[:] = [fill] * n
        return column
    return np.full(n, fill)


def _per_type_rows(parts, name: str, gpu_types: tuple[str, ...]) -> np.ndarray:
    """A jobs x GPU-types column of several workloads stacked, each part's types put in their
    place among ``gpu_types`` (inf where a part has no figure for a type)."""
    stacked = np.full((sum(len(part) for part in parts), len(gpu_types)), np.inf)
    row = 0
    for part in parts:
        for column, gpu in enumerate(part.gpu_types):
            values = getattr(part, name)
            values = part.durations if values is None else values
            stacked[row:row + len(part), gpu_types.index(gpu)] = values[:, column]
        row += len(part)
    return stacked


def submitted_in(submit: np.ndarray, start: Optional[float], end: Optional[float]) -> np.ndarray:
    """Mask of the submissions in [start, end); an open end where None."""
    mask = np.ones(len(submit), dtype=bool)
    if start is not None:
        mask &= submit >= start
    if end is not None:
        mask &= submit < end
    return mask


def _per_type(value: PerType) -> dict[str, float]:
    return dict(value) if isinstance(value, Mapping) else {DEFAULT_GPU_TYPE: float(value)}


@dataclass(frozen=True)
class Workload:
    """Jobs as columns. ``durations[i, k]`` is job i's run time on
    ``gpu_types[k]`` (inf where it cannot run there). The optional live-state
    columns describe a cluster already in progress (see docs/sim.md)."""

    job_ids: np.ndarray          # str
    submit: np.ndarray           # float64 seconds on the source's clock
    gpus: np.ndarray             # int64
    durations: np.ndarray        # float64, jobs x GPU types
    gpu_types: tuple[str, ...] = (DEFAULT_GPU_TYPE,)
    virtual_cluster: Optional[np.ndarray] = None
    lines: Optional[np.ndarray] = None
    estimates: Optional[np.ndarray] = None
    deadlines: Optional[np.ndarray] = None       # absolute time each job should finish by (NaN: none); EDF, LST
    type_estimates: Optional[np.ndarray] = None  # jobs x GPU types, estimated run times (gpu_type_choice=estimated)
    attained_gpu_s: Optional[np.ndarray] = None
    done_fraction: Optional[np.ndarray] = None
    remaining_s: Optional[np.ndarray] = None     # work left on the fastest type; wins over done_fraction
    running: Optional[np.ndarray] = None
    service_since_promotion_gpu_s: Optional[np.ndarray] = None
    held_since_promotion_s: Optional[np.ndarray] = None
    queue_entry_s: Optional[np.ndarray] = None
    pending_since_s: Optional[np.ndarray] = None
    first_start_s: Optional[np.ndarray] = None
    work_start_s: Optional[np.ndarray] = None
    last_start_s: Optional[np.ndarray] = None
    placement: Optional[np.ndarray] = None       # object: ((gpu_type, node, gpus), ...) of running jobs
    tiresias_queue: Optional[np.ndarray] = None  # read-only, as a snapshot found it
    source: str = "<memory>"
    bad_rows: tuple[BadRow, ...] = field(default=())

    def __post_init__(self):
        n = len(self.submit)
        if self.durations.shape != (n, len(self.gpu_types)):
            raise WorkloadError(f"durations has shape {self.durations.shape}, expected {(n, len(self.gpu_types))}")
        if self.type_estimates is not None and self.type_estimates.shape != self.durations.shape:
            raise WorkloadError(f"type_estimates has shape {self.type_estimates.shape}, "
                                f"expected {self.durations.shape} (jobs x GPU types)")
        for name in _JOB_COLUMNS:
            column = getattr(self, name)
            if column is not None and len(column) != n:
                raise WorkloadError(f"column {name} has {len(column)} rows, expected {n}")

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def duration(self) -> np.ndarray:
        """Each job's run time on the GPU type it runs fastest on."""
        return self.durations.min(axis=1)

    def describe(self, index: int) -> str:
        """Names job ``index`` the way a user can find it in the source."""
        where = f" ({self.source}:{self.lines[index]})" if self.lines is not None else ""
        return f"job {self.job_ids[index]}{where}"

    def subset(self, mask: np.ndarray) -> "Workload":
        changes = {}
        for column in dataclasses.fields(self):
            value = getattr(self, column.name)
            if isinstance(value, np.ndarray):
                changes[column.name] = value[mask]
        return dataclasses.replace(self, **changes)

    def window(self, start: Optional[float] = None, end: Optional[float] = None) -> "Workload":
        """Jobs submitted in [start, end) (seconds on the source's clock)."""
        return self.subset(submitted_in(self.submit, start, end))

    def in_virtual_cluster(self, names: Union[str, Iterable[str]]) -> "Workload":
        """The jobs of one virtual cluster, or of any of several."""
        if self.virtual_cluster is None:
            raise WorkloadError("this workload has no virtual cluster column", self.source)
        wanted = [names] if isinstance(names, str) else list(names)
        return self.subset(np.isin(self.virtual_cluster, wanted))

    @property
    def live(self) -> bool:
        """True when any job carries live-cluster state."""
        return any(getattr(self, name) is not None for name in LIVE_COLUMNS)

    @classmethod
    def concat(cls, parts: Iterable["Workload"], source: Optional[str] = None) -> "Workload":
        """The jobs of several workloads in order (e.g. a snapshot of a live
        cluster and a forecast of the jobs to come). A column some parts lack
        is filled with the fresh-job value; estimates and line numbers are
        kept only when every part has them."""
        parts = [part for part in parts]
        if not parts:
            raise WorkloadError("nothing to concatenate")
        gpu_types = tuple(dict.fromkeys(gpu for part in parts for gpu in part.gpu_types))
        columns = {"durations": _per_type_rows(parts, "durations", gpu_types)}
        for name in _JOB_COLUMNS:
            values = [getattr(part, name) for part in parts]
            missing = [value is None for value in values]
            if name in _PER_TYPE_COLUMNS:  # a part without them is placed by its durations
                if not all(missing):
                    columns[name] = _per_type_rows(parts, name, gpu_types)
                continue
            if all(missing) or (any(missing) and name not in _FILL):
                continue
            columns[name] = np.concatenate([_filled(value, len(part), _FILL.get(name))
                                            for value, part in zip(values, parts)])
        return cls(gpu_types=gpu_types, source=source or parts[0].source, **columns)

    @classmethod
    def from_jobs(cls, jobs: Iterable[JobSpec], source: str = "<memory>") -> "Workload":
        jobs = list(jobs)
        per_job = [job.durations() for job in jobs]
        gpu_types = tuple(dict.fromkeys(gpu for durations in per_job for gpu in durations)) or (DEFAULT_GPU_TYPE,)
        durations = np.full((len(jobs), len(gpu_types)), np.inf)
        for row, job_durations in enumerate(per_job):
            for gpu, seconds in job_durations.items():
                durations[row, gpu_types.index(gpu)] = seconds
        estimates = [job.estimate_s for job in jobs]
        return cls(
            job_ids=np.array([job.job_id for job in jobs], dtype=object),
            submit=np.array([job.submit_s for job in jobs], dtype=np.float64),
            gpus=np.array([job.gpus for job in jobs], dtype=np.int64),
            durations=durations,
            gpu_types=gpu_types,
            virtual_cluster=np.array([job.virtual_cluster for job in jobs], dtype=object),
            estimates=None if None in estimates else np.array(estimates, dtype=np.float64),
            source=source,
        )
