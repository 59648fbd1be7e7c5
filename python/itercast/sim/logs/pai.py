"""Alibaba PAI's GPU cluster trace (cluster-trace-gpu-v2020): ``pai_job_table``
and ``pai_task_table``, with or without a header line (the published CSVs
have none; their column names are in the dataset's ``.header`` files).

A job is submitted at its ``start_time`` in the job table and starts when
its first task does; it asks for the sum over its tasks of
``inst_num x plan_gpu / 100`` GPUs (``plan_gpu`` is a percentage of one GPU
per instance). Times are seconds on the trace's own clock."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import JobLog
from itercast.sim.logs.common import NAN, BadRows, LogJob, RowError, check_order, job_log, number

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
JOB_TABLE = "pai_job_table.csv"
NO_TASK = "no task"


@dataclass
class _Tasks:
    """What a job's tasks add up to, or the first of them that could not be read."""

    gpus: float = 0.0
    start: float = NAN
    fault: Optional[tuple[int, str]] = None  # (task table line, reason)


def pai_tables(path: Path) -> Optional[tuple[Path, Path]]:
    """The job and task tables: ``path`` is the job table (the task table beside
    it, its name with ``job`` replaced by ``task``) or a directory holding both."""
    if path.is_dir():
        named = path / JOB_TABLE
        candidates = [named] if named.is_file() else sorted(path.glob("*job_table*.csv"))
        if len(candidates) != 1:
            return None
        path = candidates[0]
    head, found, tail = path.name.rpartition("job")
    if not found:
        return None
    return path, path.with_name(f"{head}task{tail}")


def read_pai(path: Path, strict: bool) -> JobLog:
    tables = pai_tables(path)
    if tables is None:
        raise WorkloadError(f"no PAI job table: give pai_job_table.csv (the task table beside it) "
                            f"or a directory holding {JOB_TABLE} and pai_task_table.csv", str(path))
    job_path, task_path = tables
    if not task_path.is_file():
        raise WorkloadError(f"no task table {task_path.name} beside the job table (PAI's GPUs and start "
                            f"times are in pai_task_table.csv)", str(job_path))
    bad_rows = BadRows(job_path, strict)
    tasks = _read_tasks(task_path)
    jobs, no_task = [], 0
    for line, row in _rows(job_path, JOB_COLUMNS):
        try:
            job = _job(row, line, tasks)
        except RowError as error:
            bad_rows.reject(line, str(error))
            continue
        except _TaskFault as fault:
            bad_rows.reject(line, fault.reason, path=task_path, path_line=fault.line)
            continue
        if job is None:
            no_task += 1
        else:
            jobs.append(job)
    return job_log(jobs, path=job_path, fmt="pai", bad_rows=bad_rows, skipped={NO_TASK: no_task})


class _TaskFault(Exception):
    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line, self.reason = line, reason


def _job(row: list, line: int, tasks: dict) -> Optional[LogJob]:
    """The job of a job-table row, None when the task table has no task of it."""
    if len(row) != len(JOB_COLUMNS):
        raise RowError(f"{len(row)} fields, a job table row has {len(JOB_COLUMNS)}")
    name, _, _, status, submit_text, end_text = (field.strip() for field in row)
    if not name:
        raise RowError("no job_name")
    submit = _seconds(submit_text, "start_time (submission)")
    if math.isnan(submit):
        raise RowError("no start_time (submission)")
    found = tasks.get(name)
    if found is None:
        return None
    if found.fault is not None:
        raise _TaskFault(*found.fault)
    return check_order(LogJob(name, submit, found.start, _seconds(end_text, "end_time"), found.gpus, "",
                              status, line))


def _read_tasks(task_path: Path) -> dict[str, _Tasks]:
    tasks: dict[str, _Tasks] = {}
    for line, row in _rows(task_path, TASK_COLUMNS):
        if not row or not row[0].strip():
            continue  # a task of no job cannot make any job wrong
        job = tasks.setdefault(row[0].strip(), _Tasks())
        if job.fault is not None:
            continue
        try:
            gpus, start = _task(row)
        except RowError as error:
            job.fault = (line, str(error))
            continue
        job.gpus += gpus
        job.start = start if math.isnan(job.start) else min(job.start, start)
    return tasks


def _task(row: list) -> tuple[float, float]:
    """A task's GPUs (instances x percent of a GPU each / 100) and start time."""
    if len(row) != len(TASK_COLUMNS):
        raise RowError(f"{len(row)} fields, a task table row has {len(TASK_COLUMNS)}")
    fields = dict(zip(TASK_COLUMNS, (field.strip() for field in row)))
    instances = _seconds(fields["inst_num"], "inst_num")
    percent = _seconds(fields["plan_gpu"], "plan_gpu")
    if math.isnan(instances) or instances < 0:
        raise RowError(f"inst_num {fields['inst_num']!r} is not a count of instances")
    if percent < 0:
        raise RowError(f"plan_gpu {fields['plan_gpu']!r} is negative")
    gpus = 0.0 if math.isnan(percent) else instances * percent / 100.0
    start = _seconds(fields["start_time"], "start_time")
    return gpus, NAN if math.isnan(start) else start


def _seconds(text: str, column: str) -> float:
    """A time or amount; empty (or pandas' ``nan``) is unknown."""
    return NAN if text == "" or text.lower() == "nan" else number(text, column)


def _rows(path: Path, columns: tuple[str, ...]):
    """(line, fields) of a PAI table, past its header line if it has one."""
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        for row in reader:
            line = reader.line_num
            if line == 1 and [field.strip() for field in row] == list(columns):
                continue
            if any(field.strip() for field in row):
                yield line, row


def has_pai_header(fields: list[str]) -> bool:
    return [field.strip() for field in fields] == list(JOB_COLUMNS)
