"""What a scheduler knows about job durations at a given instant, and a
duration estimator fitted on it (for SJF, SRTF and QSSF when the workload
supplies no ``estimated_duration``).

The "known at now" contract (shared with ``itercast.sched.forecast``): a fit
at ``now`` sees the jobs submitted before ``now``; a job's true duration is
used only if the job finished by ``now``. Jobs submitted at or after ``now``
are ignored and finish times after ``now`` count as "still running", so a
caller may pass a whole trace and its simulated finish times without leaking
the future.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from itercast.sim.errors import WorkloadError
from itercast.sim.workload import Workload

# Median job duration of the Philly trace (REFERENCES.md): the estimate when
# no job at all has finished in the history window.
PHILLY_MEDIAN_DURATION_S = 1144.0


@dataclass(frozen=True)
class KnownJobs:
    """The jobs submitted before ``now`` that a fit looks at, as columns."""

    submit: np.ndarray
    gpus: np.ndarray
    virtual_cluster: Optional[np.ndarray]   # None when the workload has none (Tiresias format)
    duration: np.ndarray                     # NaN unless the job finished by now
    finish: np.ndarray                       # NaN unless the job finished by now

    def __len__(self) -> int:
        return len(self.submit)

    def subset(self, mask: np.ndarray) -> "KnownJobs":
        return KnownJobs(self.submit[mask], self.gpus[mask],
                         None if self.virtual_cluster is None else self.virtual_cluster[mask],
                         self.duration[mask], self.finish[mask])

    def finished_in(self, start: float, end: float) -> np.ndarray:
        """Mask of the jobs that finished in [start, end]."""
        return (self.finish >= start) & (self.finish <= end)

    def submitted_in(self, start: float, end: float) -> np.ndarray:
        """Mask of the jobs submitted in [start, end)."""
        return (self.submit >= start) & (self.submit < end)


def known_at(jobs: Workload, finish: np.ndarray, now: float, *, since: float = -np.inf) -> KnownJobs:
    """The part of ``jobs`` a scheduler knows at ``now``: jobs submitted in
    [since, now), plus older ones that finished at or after ``since``;
    durations only of jobs that finished by ``now``."""
    now = _finite("now", now)
    finish = np.asarray(finish, dtype=np.float64)
    if finish.shape != (len(jobs),):
        raise WorkloadError(f"finish has shape {finish.shape}, expected ({len(jobs)},): one finish time per job")
    finished = finish <= now
    if np.any(finish[finished] < jobs.submit[finished]):
        first = int(np.flatnonzero(finished & (finish < jobs.submit))[0])
        raise WorkloadError(f"{jobs.describe(first)} finishes before it is submitted")
    keep = np.flatnonzero((jobs.submit < now) & ((jobs.submit >= since) | (finished & (finish >= since))))
    finished = finished[keep]
    return KnownJobs(
        submit=jobs.submit[keep],
        gpus=jobs.gpus[keep],
        virtual_cluster=None if jobs.virtual_cluster is None else jobs.virtual_cluster[keep],
        duration=np.where(finished, jobs.durations[keep].min(axis=1), np.nan),
        finish=np.where(finished, finish[keep], np.nan),
    )


def _finite(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, got {value}")
    return value


def positive_seconds(name: str, value: float) -> float:
    value = _finite(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value:g}")
    return value


def check_job_columns(gpus: np.ndarray, virtual_cluster: Optional[np.ndarray], *others: np.ndarray):
    """GPU counts as int64, after checking every column has one row per job."""
    gpus = np.asarray(gpus, dtype=np.int64)
    for column in (virtual_cluster, *others):
        if column is not None and len(column) != len(gpus):
            raise WorkloadError(f"columns have {len(gpus)} and {len(column)} rows: one value per job expected")
    return gpus


class GroupCodes:
    """Integer codes for the (virtual cluster, GPU count) groups of the
    hierarchy vc x gpus -> gpus -> all; a virtual cluster never seen in the
    fit gets code -1, which matches no vc x gpus group."""

    def __init__(self, virtual_clusters: Optional[np.ndarray]):
        self.names = None
        self._index: dict = {}
        if virtual_clusters is not None:
            self.names = np.array(sorted(set(virtual_clusters.tolist())), dtype=object)
            self._index = {name: code for code, name in enumerate(self.names.tolist())}

    def vc_codes(self, virtual_cluster: Optional[np.ndarray], n: int) -> np.ndarray:
        if virtual_cluster is None or not self._index:
            return np.full(n, -1, dtype=np.int64)
        code = self._index.get
        names = np.asarray(virtual_cluster, dtype=object).tolist()
        return np.fromiter((code(name, -1) for name in names), dtype=np.int64, count=n)

    @staticmethod
    def vc_gpu_keys(vc_codes: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """One key per (vc, gpus) pair; -1 where the virtual cluster is unknown."""
        return np.where(vc_codes >= 0, (vc_codes << 32) | gpus, -1)

    def vc_names(self, vc_codes: np.ndarray) -> Optional[np.ndarray]:
        return None if self.names is None else self.names[vc_codes].astype(object)


def _sorted_median(duration: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return (duration[first + (counts - 1) // 2] + duration[first + counts // 2]) / 2


def _geometric_mean(duration: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.exp(np.add.reduceat(np.log(duration), first) / counts)


def _mean(duration: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(duration, first) / counts


# Per-group statistics of durations sorted within each group starting at `first`.
STATISTICS = {"median": _sorted_median, "geomean": _geometric_mean, "mean": _mean}


class DurationEstimator:
    """Per (virtual cluster, GPU count) mean duration of the jobs that
    finished in the last ``history_s`` before ``now`` (as Helios' QSSF and
    Lucid estimate from history), falling back vc x gpus -> gpus -> all when
    a group has fewer than ``min_group`` finished jobs, and to ``prior_s``
    (the Philly median, 1,144 s) when nothing finished at all.

    Why the mean (``statistic="mean"``): a non-preemptive shortest-first
    policy minimises the expected total completion time by ranking on
    expected durations (Smith's rule with expectations), and durations are
    heavy-tailed, so a group's median understates how long its jobs hold
    GPUs. Measured on Philly replayed on 256 GPUs (benchmarks/
    forecast_realism.py, docs/forecast.md), the mean gives SJF and QSSF the
    lowest average JCT of mean, median and geometric mean, but SRTF (which
    scales the estimate by the work left) does better with ``"median"``.
    """

    def __init__(self, history_s: float = 86400.0, min_group: int = 5,
                 prior_s: float = PHILLY_MEDIAN_DURATION_S, statistic: str = "mean"):
        self.history_s = positive_seconds("history_s", history_s)
        if min_group < 1:
            raise ValueError(f"min_group must be at least 1, got {min_group}")
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
        self.min_group = int(min_group)
        self.statistic = statistic
        self.prior_s = positive_seconds("prior_s", prior_s)
        self._codes = GroupCodes(None)
        self._levels: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
        self._overall = self.prior_s
        self._fitted_jobs = 0

    def fit(self, jobs: Workload, finish: np.ndarray, now: float) -> "DurationEstimator":
        """Learns from the jobs that finished in [now - history_s, now]
        (only what is known at ``now``, see the module docstring)."""
        known = known_at(jobs, finish, now, since=float(now) - self.history_s)
        done = known.finished_in(float(now) - self.history_s, float(now))
        duration, gpus = known.duration[done], known.gpus[done]
        vcs = None if known.virtual_cluster is None else known.virtual_cluster[done]
        self._codes = GroupCodes(vcs)
        vc_codes = self._codes.vc_codes(vcs, len(gpus))
        self._levels = (
            self._group_statistic(GroupCodes.vc_gpu_keys(vc_codes, gpus), duration),
            self._group_statistic(gpus, duration),
        )
        self._overall = self._statistic_of_all(duration) if len(duration) else self.prior_s
        self._fitted_jobs = int(done.sum())
        return self

    def _group_statistic(self, keys: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys of the groups with at least min_group jobs, and their statistic."""
        order = np.lexsort((duration, keys))
        keys, duration = keys[order], duration[order]
        unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
        big = (counts >= self.min_group) & (unique >= 0)
        if not big.any():
            return unique[big], duration[:0]
        return unique[big], STATISTICS[self.statistic](duration, first, counts)[big]

    def _statistic_of_all(self, duration: np.ndarray) -> float:
        whole = (np.zeros(1, dtype=np.int64), np.array([len(duration)]))
        return float(STATISTICS[self.statistic](np.sort(duration), *whole)[0])

    def predict(self, gpus: np.ndarray, virtual_cluster: Optional[np.ndarray]) -> np.ndarray:
        """Estimated duration (seconds, positive and finite) of each job."""
        gpus = check_job_columns(gpus, virtual_cluster)
        estimate = np.full(len(gpus), self._overall)
        if not self._levels:
            return estimate
        vc_keys = GroupCodes.vc_gpu_keys(self._codes.vc_codes(virtual_cluster, len(gpus)), gpus)
        # Coarse to fine, so the finest group that is big enough wins.
        for (keys, medians), query in zip(reversed(self._levels), (gpus, vc_keys)):
            if len(keys) == 0:
                continue
            where = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
            estimate = np.where(keys[where] == query, medians[where], estimate)
        return estimate

    @property
    def fitted_jobs(self) -> int:
        """How many finished jobs the last fit learned from."""
        return self._fitted_jobs
