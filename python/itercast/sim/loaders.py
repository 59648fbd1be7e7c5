"""Workload loaders for the Philly, Tiresias and Helios CSV schemas, and for
schedulers' own logs (Slurm, PAI, Kubernetes: ``itercast.sim.logs``).

Rows that cannot be a job (negative or zero duration, zero GPUs, unparsable
fields) are kept out of the workload and listed in ``Workload.bad_rows`` with
their line numbers; ``strict=True`` turns the first one into an error.
Any format may carry an optional ``estimated_duration`` column (seconds), the
per-job estimate the ``estimate=supplied`` mode uses, and a ``deadline``
column (same clock as the submit time) that EDF and LST rank by. A file may
carry several estimators' estimates as ``estimated_duration:<name>`` columns;
``estimator=<name>`` reads the estimates from that one instead.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import numpy as np

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import log_workload
from itercast.sim.logs import LOG_FORMATS, detect_log_format, load_job_log
from itercast.sim.logs.common import utc_seconds
from itercast.sim.workload import BadRow, Workload

# A time before this (a year after the Unix epoch) is on a clock that counts from the log's own start (Tiresias,
# PAI), not a date.
RELATIVE_CLOCK_BEFORE_S = 365 * 86400.0
ESTIMATE_COLUMN = "estimated_duration"
ESTIMATOR_SEPARATOR = ":"  # estimated_duration:<estimator name>
DEADLINE_COLUMN = "deadline"  # absolute, on the submit column's clock


class _RowError(ValueError):
    pass


@dataclass(frozen=True)
class _Job:
    job_id: str
    submit: float
    gpus: int
    duration: float
    virtual_cluster: str
    estimate: float
    deadline: float


@dataclass(frozen=True)
class _Format:
    name: str
    columns: tuple[str, ...]
    parse: Optional[Callable[[dict, int], _Job]]  # None: a scheduler's log, read by itercast.sim.logs


def parse_time(text: str) -> float:
    """Seconds: a plain number, or an ISO date/time read as UTC."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return utc_seconds(text)
    except ValueError:
        raise _RowError(f"cannot read time {text!r}") from None


def _number(row: dict, column: str, kind=float):
    text = (row.get(column) or "").strip()
    try:
        value = kind(float(text)) if kind is int else kind(text)
    except ValueError:
        raise _RowError(f"{column} {text!r} is not a number") from None
    if kind is int and value != float(text):
        raise _RowError(f"{column} {text!r} is not a whole number")
    return value


def _job(job_id: str, submit: float, gpus: int, duration: float, vc: str, row: dict) -> _Job:
    if not np.isfinite(duration) or duration <= 0:
        raise _RowError(f"duration must be positive, got {duration:g}")
    if gpus <= 0:
        raise _RowError(f"GPU count must be positive, got {gpus}")
    estimate = _number(row, ESTIMATE_COLUMN) if (row.get(ESTIMATE_COLUMN) or "").strip() else np.nan
    deadline = parse_time(row[DEADLINE_COLUMN]) if (row.get(DEADLINE_COLUMN) or "").strip() else np.nan
    return _Job(job_id, submit, gpus, duration, vc, estimate, deadline)


def _philly(row: dict, line: int) -> _Job:
    return _job(f"L{line}", parse_time(row["timestamp"]), _number(row, "num_gpus", int),
                _number(row, "duration"), row["cluster"].strip(), row)


def _tiresias(row: dict, line: int) -> _Job:
    return _job(row["job_id"].strip(), _number(row, "submit_time"), _number(row, "num_gpu", int),
                _number(row, "duration"), "", row)


def _helios(row: dict, line: int) -> _Job:
    return _job(row["job_id"].strip(), parse_time(row["submit_time"]), _number(row, "gpu_num", int),
                _number(row, "duration"), row["vc"].strip(), row)


_TRACE_FORMATS = {
    "philly": _Format("philly", ("timestamp", "duration", "num_gpus", "cluster"), _philly),
    "tiresias": _Format("tiresias", ("job_id", "num_gpu", "submit_time", "duration"), _tiresias),
    "helios": _Format("helios", ("job_id", "vc", "gpu_num", "submit_time", "duration"), _helios),
}
FORMATS = {**_TRACE_FORMATS, **{name: _Format(name, (), None) for name in LOG_FORMATS}}


def load_workload(path, fmt: Optional[str] = None, *, start: Optional[float] = None,
                  end: Optional[float] = None, virtual_cluster: Union[str, Sequence[str], None] = None,
                  strict: bool = False, estimator: Optional[str] = None) -> Workload:
    """Reads a workload CSV (format guessed from the header unless given),
    keeps jobs submitted in [start, end) and, if given, of a virtual cluster (or any of several);
    the estimates are those of ``estimator``'s column when one is named.
    A scheduler's log (``fmt`` slurm, pai, k8s-pods or kubectl, or detected)
    gives the jobs of ``load_job_log(path).workload()`` as a ``LogWorkload``."""
    path = Path(path)
    log_format = log_format_of(path, fmt)
    if log_format is not None:
        if estimator is not None:
            raise WorkloadError(f"a {log_format} log carries no estimates to take estimator {estimator!r}'s from",
                                str(path))
        return log_workload(read_log(path, log_format, start=start, end=end, virtual_cluster=virtual_cluster,
                                     strict=strict))
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            header = tuple(name.strip() for name in (reader.fieldnames or ()))
            reader.fieldnames = list(header)
            spec = _choose_format(path, header, fmt)
            estimate_column = _estimate_column(path, header, estimator)
            jobs, bad_rows = _read_rows(reader, spec, path, strict, estimate_column)
    except UnicodeDecodeError as error:
        raise WorkloadError(f"not a text CSV file ({error.reason})", str(path)) from None
    workload = _to_workload(jobs, bad_rows, str(path), has_vc=spec.name != "tiresias")
    if virtual_cluster is not None:
        workload = workload.in_virtual_cluster(virtual_cluster)
    workload = workload.window(start, end)
    if len(workload) == 0:
        raise WorkloadError("no jobs left after reading and filtering", str(path))
    return workload


def log_format_of(path, fmt: Optional[str] = None) -> Optional[str]:
    """The scheduler-log format of ``path``: ``fmt`` when it names one, else the one detected when ``fmt`` is
    None; None for a replay trace (Philly, Tiresias, Helios)."""
    if fmt in LOG_FORMATS:
        return fmt
    return detect_log_format(path) if fmt is None else None


def read_log(path, fmt: str, *, start: Optional[float] = None, end: Optional[float] = None,
             virtual_cluster: Union[str, Sequence[str], None] = None, strict: bool = False):
    """A scheduler's log (``JobLog``), keeping the jobs submitted in [start, end) and, if given, of a virtual
    cluster (or any of several)."""
    log = load_job_log(path, fmt, strict=strict)
    if virtual_cluster is not None:
        log = log.in_virtual_cluster(virtual_cluster)
    log = log.window(start, end)
    if len(log) == 0:
        raise WorkloadError("no jobs left after reading and filtering", log.source)
    return log


def _choose_format(path: Path, header: tuple[str, ...], fmt: Optional[str]) -> _Format:
    if fmt is not None:
        if fmt not in FORMATS:
            raise WorkloadError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", str(path))
        spec = FORMATS[fmt]
        missing = [column for column in spec.columns if column not in header]
        if missing:
            detected = detect_log_format(path)
            hint = f"; it reads as a {detected} log (give --format {detected}, or none)" if detected else ""
            raise WorkloadError(f"header lacks {fmt} column(s) {', '.join(missing)}{hint}", str(path), 1)
        return spec
    for spec in _TRACE_FORMATS.values():
        if all(column in header for column in spec.columns):
            return spec
    raise WorkloadError(f"header {','.join(header)} matches no known format ({', '.join(FORMATS)})",
                        str(path), 1)


def estimator_names(header) -> list[str]:
    """The estimators whose ``estimated_duration:<name>`` columns a header has."""
    prefix = ESTIMATE_COLUMN + ESTIMATOR_SEPARATOR
    return [column[len(prefix):] for column in header if column.startswith(prefix)]


def _estimate_column(path: Path, header: tuple[str, ...], estimator: Optional[str]) -> str:
    if estimator is None:
        return ESTIMATE_COLUMN
    column = ESTIMATE_COLUMN + ESTIMATOR_SEPARATOR + estimator
    if column not in header:
        names = estimator_names(header)
        have = f"has {', '.join(names)}" if names else f"has no {ESTIMATE_COLUMN}:<name> column"
        raise WorkloadError(f"no column {column} for estimator {estimator!r} ({have})", str(path), 1)
    return column


def _read_rows(reader: csv.DictReader, spec: _Format, path: Path, strict: bool, estimate_column: str):
    jobs, bad_rows = [], []
    for row in reader:
        line = reader.line_num
        try:
            if None in row.values() or None in row:
                raise _RowError("wrong number of fields")
            if estimate_column != ESTIMATE_COLUMN:
                row = {**row, ESTIMATE_COLUMN: row[estimate_column]}
            jobs.append((spec.parse(row, line), line))
        except _RowError as error:
            if strict:
                raise WorkloadError(str(error), str(path), line) from None
            bad_rows.append(BadRow(line, str(error)))
    return jobs, bad_rows


def _to_workload(jobs: list, bad_rows: list, source: str, has_vc: bool) -> Workload:
    records = [job for job, _ in jobs]
    estimates = np.array([job.estimate for job in records], dtype=np.float64)
    deadlines = np.array([job.deadline for job in records], dtype=np.float64)
    return Workload(
        job_ids=np.array([job.job_id for job in records], dtype=object),
        submit=np.array([job.submit for job in records], dtype=np.float64),
        gpus=np.array([job.gpus for job in records], dtype=np.int64),
        durations=np.array([job.duration for job in records], dtype=np.float64).reshape(-1, 1),
        virtual_cluster=np.array([job.virtual_cluster for job in records], dtype=object) if has_vc else None,
        lines=np.array([line for _, line in jobs], dtype=np.int64),
        estimates=estimates if len(records) and not np.isnan(estimates).any() else None,
        deadlines=deadlines if len(records) and not np.isnan(deadlines).all() else None,
        source=source,
        bad_rows=tuple(bad_rows),
    )
