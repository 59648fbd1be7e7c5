"""What every log reader shares: a job as a reader finds it, bad rows
(skipped, or an error under ``strict``), times, and the ``JobLog`` they make."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import NO_GPU, JobLog
from itercast.sim.workload import BadRow

NAN = math.nan


class RowError(ValueError):
    """A row (or JSON item) that cannot be a job; the reader skips it or, under strict, stops."""


@dataclass(frozen=True)
class LogJob:
    job_id: str
    submit: float
    start: float        # NaN: not started
    end: float          # NaN: not ended
    gpu_request: float  # possibly fractional; 0: a CPU-only job
    virtual_cluster: str
    state: str
    line: int


class BadRows:
    """Collects the rows a reader could not read, or raises on the first under ``strict``."""

    def __init__(self, path: Path, strict: bool):
        self.path, self.strict = path, strict
        self.rows: list[BadRow] = []

    def reject(self, line: int, reason: str, *, path: Optional[Path] = None, path_line: Optional[int] = None):
        """Skips the job at ``line``. When the fault is at ``path``:``path_line``,
        another file (PAI's task table), the reason names it, as does the error under strict."""
        if self.strict:
            raise WorkloadError(reason, str(path or self.path), line if path is None else path_line)
        self.rows.append(BadRow(line, reason if path is None else f"{path.name}:{path_line}: {reason}"))


def utc_seconds(text: str) -> float:
    """Unix seconds of an ISO 8601 date/time (a trailing Z allowed); one without a zone is UTC. ValueError
    when ``text`` is not one."""
    text = text.strip()
    moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def iso_time(text: str, column: str) -> float:
    try:
        return utc_seconds(text)
    except ValueError:
        raise RowError(f"{column} {text.strip()!r} is not a date/time") from None


def number(text: str, column: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise RowError(f"{column} {text.strip()!r} is not a number") from None
    if math.isinf(value):
        raise RowError(f"{column} {text.strip()!r} is not a finite number")
    return value


def check_order(job: LogJob) -> LogJob:
    if not math.isnan(job.start) and not math.isnan(job.end) and job.end < job.start:
        raise RowError(f"ends {job.start - job.end:.0f} s before it starts")
    return job


def job_log(jobs: Iterable[LogJob], *, path: Path, fmt: str, bad_rows: BadRows,
            skipped: Optional[dict] = None) -> JobLog:
    """The ``JobLog`` of a reader's jobs: CPU-only jobs are counted as skipped
    "no GPU"; ``log_end`` is the latest time any job (CPU-only ones too) records."""
    jobs = list(jobs)
    times = [t for job in jobs for t in (job.submit, job.start, job.end) if not math.isnan(t)]
    if not times:
        raise WorkloadError(f"no {fmt} job could be read", str(path))
    gpu_jobs = [job for job in jobs if job.gpu_request > 0]
    skipped = {NO_GPU: len(jobs) - len(gpu_jobs), **(skipped or {})}
    return JobLog(
        job_ids=np.array([job.job_id for job in gpu_jobs], dtype=object),
        submit=np.array([job.submit for job in gpu_jobs], dtype=np.float64),
        start=np.array([job.start for job in gpu_jobs], dtype=np.float64),
        end=np.array([job.end for job in gpu_jobs], dtype=np.float64),
        gpu_request=np.array([job.gpu_request for job in gpu_jobs], dtype=np.float64),
        virtual_cluster=np.array([job.virtual_cluster for job in gpu_jobs], dtype=object),
        state=np.array([job.state for job in gpu_jobs], dtype=object),
        lines=np.array([job.line for job in gpu_jobs], dtype=np.int64),
        log_end=max(times), source=str(path), format=fmt,
        bad_rows=tuple(sorted(bad_rows.rows, key=lambda row: row.line)), skipped=skipped)
