"""A cluster scheduler's own record of its jobs (Slurm's accounting, a
Kubernetes pod list, Alibaba PAI's tables): when each job was submitted,
started and ended, as far as the log knows.

Unlike a replay trace (Philly, Tiresias, Helios), such a log has jobs that
never started (cancelled in the queue), jobs still queued or running when the
log was taken (their end unknown: censored), and GPU requests that may be
fractions of a GPU. ``JobLog`` keeps all of them; ``workload()`` gives the
jobs a simulator can replay, ``at(time)`` the cluster as it stood then.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Union

import numpy as np

from itercast.sim.errors import WorkloadError
from itercast.sim.workload import BadRow, Workload, submitted_in

PENDING, RUNNING, FINISHED, NEVER_STARTED = "pending", "running", "finished", "never started"
RAN_ZERO, NO_GPU = "ran 0 s", "no GPU"


@dataclass(frozen=True)
class JobState:
    """Masks over a ``JobLog``'s jobs at one instant ``time``: ``finished``
    by then, ``running`` then, ``queued`` then (submitted, not started, not
    cancelled), and ``submitted`` (all that arrived by then)."""

    time: float
    submitted: np.ndarray
    finished: np.ndarray
    running: np.ndarray
    queued: np.ndarray


@dataclass(frozen=True)
class JobLog:
    """Jobs as columns. ``start`` is NaN for a job that had not started when
    the log was taken (or never did); ``end`` is NaN for a job still running
    or queued then. A job that never started but has an ``end`` was
    cancelled (or failed) in the queue. ``gpus`` is what the simulator
    allocates: the request ``gpu_request`` rounded up to whole GPUs
    (docs/sim.md, "Fractional GPUs"). ``log_end`` is when the log was
    taken: the latest time it records. ``skipped`` counts the jobs a reader
    left out of the log by reason (e.g. "no GPU": CPU-only jobs)."""

    job_ids: np.ndarray          # object: the log's own job ids
    submit: np.ndarray           # float64 seconds (Unix time, or the log's own clock)
    start: np.ndarray            # float64, NaN: not started by log_end
    end: np.ndarray              # float64, NaN: not ended by log_end
    gpu_request: np.ndarray      # float64, possibly fractional
    virtual_cluster: np.ndarray  # object: partition, quota, queue ("" when the log has none)
    state: np.ndarray            # object: the log's final state, as written (COMPLETED, Failed, ...)
    lines: np.ndarray            # int64: the line (or record) each job was read from
    log_end: float
    source: str = "<memory>"
    format: str = ""
    bad_rows: tuple[BadRow, ...] = field(default=())
    skipped: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.submit)
        for name in ("job_ids", "start", "end", "gpu_request", "virtual_cluster", "state", "lines"):
            if len(getattr(self, name)) != n:
                raise WorkloadError(f"column {name} has {len(getattr(self, name))} rows, expected {n}", self.source)
        if not math.isfinite(self.log_end):
            raise WorkloadError("the log's end time is not a finite time", self.source)

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def gpus(self) -> np.ndarray:
        return np.ceil(self.gpu_request - 1e-9).astype(np.int64)

    @property
    def started(self) -> np.ndarray:
        return ~np.isnan(self.start)

    @property
    def censored(self) -> np.ndarray:
        """Jobs running when the log was taken: their run time is a lower bound."""
        return self.started & np.isnan(self.end)

    def status(self) -> np.ndarray:
        """Each job as the log leaves it: pending, running, finished or never started."""
        status = np.full(len(self), FINISHED, dtype=object)
        status[self.censored] = RUNNING
        status[~self.started & np.isnan(self.end)] = PENDING
        status[~self.started & ~np.isnan(self.end)] = NEVER_STARTED
        return status

    def at(self, time: float) -> JobState:
        """Which jobs had finished, were running and were queued at ``time``
        (a job that ends exactly at ``time`` has finished)."""
        submitted = self.submit <= time
        started = self.started & (self.start <= time)
        ended = ~np.isnan(self.end) & (self.end <= time)
        return JobState(time=float(time), submitted=submitted, finished=started & ended,
                        running=started & ~ended, queued=submitted & ~started & ~ended)

    def run_time(self, time: float | None = None) -> np.ndarray:
        """Seconds each started job ran until it ended or until ``time``
        (default the log's end), NaN for a job that had not started then."""
        time = self.log_end if time is None else time
        until = np.where(np.isnan(self.end), time, np.minimum(self.end, time))
        ran = until - self.start
        return np.where(self.started & (self.start <= time), np.maximum(ran, 0.0), np.nan)

    @property
    def fractional(self) -> np.ndarray:
        """Jobs that asked for a fraction of a GPU (``gpus`` rounds them up)."""
        return self.gpu_request != np.round(self.gpu_request)

    @property
    def replayable(self) -> np.ndarray:
        """Jobs ``workload()`` keeps: started, ran a positive time, asked for a GPU."""
        return self.started & (np.nan_to_num(self.run_time(), nan=0.0) > 0) & (self.gpu_request > 0)

    def workload(self) -> Workload:
        """The jobs a simulator can replay: every job that started, for as
        long as it ran (a censored job for as long as it had run when the log
        was taken). Jobs that never started, ran 0 s or asked for no GPU have
        nothing to replay and are left out; ``counts()`` says how many."""
        keep = self.replayable
        if not keep.any():
            raise WorkloadError("no job of the log ever ran for a positive time on a GPU", self.source)
        has_vc = bool(np.any(self.virtual_cluster != ""))
        return Workload(job_ids=self.job_ids[keep], submit=self.submit[keep], gpus=self.gpus[keep],
                        durations=self.run_time()[keep].reshape(-1, 1),
                        virtual_cluster=self.virtual_cluster[keep] if has_vc else None,
                        lines=self.lines[keep], source=self.source, bad_rows=self.bad_rows)

    def counts(self) -> dict[str, int]:
        """Jobs per status, how many asked for a fraction of a GPU, ran 0 s,
        asked for no GPU (also those a reader left out), and are replayed."""
        status = self.status()
        counts = {name: int(np.sum(status == name)) for name in (FINISHED, RUNNING, PENDING, NEVER_STARTED)}
        counts["fractional GPU"] = int(np.sum(self.fractional))
        counts["bad rows"] = len(self.bad_rows)
        has_gpu = self.gpu_request > 0
        counts[RAN_ZERO] = int(np.sum(self.started & has_gpu & ~self.replayable))
        counts[NO_GPU] = int(np.sum(~has_gpu)) + int(self.skipped.get(NO_GPU, 0))
        counts.update({reason: int(n) for reason, n in self.skipped.items() if reason != NO_GPU})
        counts["replayed"] = int(np.sum(self.replayable))
        return counts

    def subset(self, mask: np.ndarray) -> "JobLog":
        """The jobs of ``mask``; bad rows, skipped counts and ``log_end`` stay those of the whole log."""
        changes = {name: getattr(self, name)[mask] for name in _JOB_COLUMNS}
        return dataclasses.replace(self, **changes)

    def window(self, start: Optional[float] = None, end: Optional[float] = None) -> "JobLog":
        """Jobs submitted in [start, end) (seconds on the log's clock)."""
        return self.subset(submitted_in(self.submit, start, end))

    def in_virtual_cluster(self, names: Union[str, Iterable[str]]) -> "JobLog":
        """The jobs of one virtual cluster (partition, namespace), or of any of several."""
        if not np.any(self.virtual_cluster != ""):
            raise WorkloadError(f"this {self.format or 'job'} log has no virtual clusters", self.source)
        wanted = [names] if isinstance(names, str) else list(names)
        return self.subset(np.isin(self.virtual_cluster, wanted))


_JOB_COLUMNS = ("job_ids", "submit", "start", "end", "gpu_request", "virtual_cluster", "state", "lines")


@dataclass(frozen=True)
class LogWorkload(Workload):
    """A ``Workload`` read from a scheduler's log, with what ``log_summary``
    reports: the log's ``JobLog.counts()`` (after the same filters), and how
    many replayed jobs were censored or asked for a fraction of a GPU."""

    log_format: str = ""
    log_counts: Mapping[str, int] = field(default_factory=dict)
    replayed_censored: int = 0
    replayed_fractional: int = 0


def log_workload(log: JobLog) -> LogWorkload:
    """``log.workload()``, remembering what the log held beside the replayed jobs."""
    workload = log.workload()
    keep = log.replayable
    columns = {column.name: getattr(workload, column.name) for column in dataclasses.fields(Workload)}
    return LogWorkload(**columns, log_format=log.format, log_counts=log.counts(),
                       replayed_censored=int(np.sum(keep & log.censored)),
                       replayed_fractional=int(np.sum(keep & log.fractional)))


_LEFT_OUT = (NEVER_STARTED, PENDING, RAN_ZERO, NO_GPU)
_NOT_LEFT_OUT = (FINISHED, RUNNING, "fractional GPU", "bad rows", "replayed")


def log_summary(workload: Workload) -> Optional[str]:
    """One line on what a workload read from a scheduler's log left out and
    approximated (None for a workload from a trace CSV): jobs never started,
    still pending, run 0 s or without a GPU; jobs running at the log's end
    (replayed for as long as they had run); fractional GPU requests (rounded up)."""
    if not isinstance(workload, LogWorkload):
        return None
    counts = workload.log_counts
    left_out = {reason: counts.get(reason, 0) for reason in _LEFT_OUT}
    left_out.update({reason: n for reason, n in counts.items() if reason not in _LEFT_OUT + _NOT_LEFT_OUT and n})
    approximated = f"{workload.replayed_censored} still running at the log's end (replayed for the time they had run)"
    if workload.replayed_fractional:
        approximated += f", {workload.replayed_fractional} asking for a fraction of a GPU (rounded up to whole GPUs)"
    return (f"{workload.source}: {workload.log_format} log: replaying {len(workload)} jobs, {approximated}; "
            f"left out: {', '.join(f'{n} {_said(reason)}' for reason, n in left_out.items())}")


def _said(reason: str) -> str:
    return "still pending" if reason == PENDING else f"with {reason}" if reason.startswith("no ") else reason
