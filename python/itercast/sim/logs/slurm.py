"""Slurm's accounting as ``sacct --parsable2`` writes it: ``|``-separated,
a header line first (docs/sim.md, "Operators' logs").

A job's own line gives its submit, start, end, state and GPUs; its steps
(``123.batch``, ``123.0``) are not jobs. An array task ``123_4`` is a job; a
pending array record ``123_[5-9%2]`` stands for the tasks 5 to 9, pending.
A heterogeneous job's components ``123+0``, ``123+1`` are separate jobs."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import JobLog
from itercast.sim.logs.common import NAN, BadRows, LogJob, RowError, check_order, iso_time, job_log

SEPARATOR = "|"
REQUIRED = ("JobID", "State", "Submit", "Start", "End")
GPU_COLUMNS = ("AllocTRES", "ReqTRES")
UNKNOWN_TIMES = ("", "Unknown", "None")
SACCT_COMMAND = ("sacct --allusers --parsable2 --starttime <date> "
                 "-o JobID,JobName,Partition,Account,User,State,Submit,Start,End,Elapsed,AllocTRES,ReqTRES")
_JOB_ID = re.compile(r"(?P<job>\d+)(?:_(?P<task>\d+)|_\[(?P<tasks>[^\]]+)\]|\+(?P<component>\d+))?"
                     r"(?:\.(?P<step>[^|]+))?")


def read_slurm(path: Path, strict: bool) -> JobLog:
    bad_rows = BadRows(path, strict)
    jobs: dict[str, LogJob] = {}
    steps: list[tuple[str, int]] = []
    with open(path, newline="") as handle:
        header, trailing = _header(path, handle.readline())
        for line, text in enumerate(handle, start=2):
            if not text.strip():
                continue
            try:
                step_of = _read_line(header, trailing, text, line, jobs)
            except RowError as error:
                bad_rows.reject(line, str(error))
                continue
            if step_of is not None:
                steps.append((step_of, line))
    for job_id, line in steps:
        if job_id not in jobs:
            bad_rows.reject(line, f"a step of job {job_id}, whose own line the log lacks")
    return job_log(jobs.values(), path=path, fmt="slurm", bad_rows=bad_rows)


def _header(path: Path, first_line: str) -> tuple[list[str], bool]:
    text = first_line.rstrip("\r\n")
    trailing = text.endswith(SEPARATOR)  # sacct --parsable (not 2) ends every line with one
    header = [name.strip() for name in (text[:-1] if trailing else text).split(SEPARATOR)]
    missing = [name for name in REQUIRED if name not in header]
    if missing or not any(name in header for name in GPU_COLUMNS):
        lacks = ", ".join(missing + ([] if any(name in header for name in GPU_COLUMNS) else ["AllocTRES or ReqTRES"]))
        raise WorkloadError(f"not sacct --parsable2 output with a header: the first line lacks {lacks} "
                            f"(write it with: {SACCT_COMMAND})", str(path), 1)
    return header, trailing


def _read_line(header: list[str], trailing: bool, text: str, line: int, jobs: dict) -> Optional[str]:
    """Adds the jobs of one line to ``jobs`` (a later line of the same job wins, as
    ``sacct --duplicates`` lists a requeued job's earlier runs first); for a step's
    line, returns the id of the job it belongs to."""
    fields = text.rstrip("\r\n").split(SEPARATOR)
    if trailing and fields and fields[-1] == "":
        fields.pop()
    if len(fields) != len(header):
        raise RowError(f"{len(fields)} fields where the header has {len(header)}")
    row = dict(zip(header, fields))
    job_id = row["JobID"].strip()
    match = _JOB_ID.fullmatch(job_id)
    if match is None:
        raise RowError(f"cannot read job id {job_id!r}")
    if match["step"] is not None:
        return job_id.split(".", 1)[0]
    for job in _record_jobs(row, match, line):
        jobs[job.job_id] = job
    return None


def _record_jobs(row: dict, match: re.Match, line: int) -> list[LogJob]:
    submit = _time(row, "Submit")
    if math.isnan(submit):
        raise RowError(f"Submit {row['Submit'].strip()!r} is not a time")
    state = row["State"].strip()
    start, end = _time(row, "Start"), _time(row, "End")
    allocated = bool(row.get("AllocTRES", "").strip())
    if state.startswith("PENDING") or ("AllocTRES" in row and not allocated):
        start = NAN  # no allocation (yet): whatever Start says, the job has not run
    if state.startswith("PENDING"):
        end = NAN
    gpus = tres_gpus(row["AllocTRES"] if allocated else row.get("ReqTRES", ""))
    partition = row.get("Partition", "").split(",")[0].strip()  # a pending job may list several
    ids = [f"{match['job']}_{task}" for task in array_tasks(match["tasks"])] if match["tasks"] else [match[0]]
    return [check_order(LogJob(job_id, submit, start, end, gpus, partition, state, line)) for job_id in ids]


def _time(row: dict, column: str) -> float:
    text = row[column].strip()
    return NAN if text in UNKNOWN_TIMES else iso_time(text, column)


def tres_gpus(tres: str) -> float:
    """GPUs of a TRES list such as ``cpu=8,gres/gpu=4,gres/gpu:a100=4,mem=64G``:
    the untyped ``gres/gpu`` total when there is one (Slurm writes it beside its
    typed breakdown), else the sum of the typed ``gres/gpu:<type>`` entries.
    ``gres/gpumem`` and ``gres/gpuutil`` are not GPUs."""
    total, typed = None, 0.0
    for item in tres.split(","):
        name, _, value = item.partition("=")
        name = name.strip()
        if name == "gres/gpu":
            total = _count(name, value)
        elif name.startswith("gres/gpu:"):
            typed += _count(name, value)
    return typed if total is None else total


def _count(name: str, text: str) -> float:
    try:
        value = int(text.strip())
    except ValueError:
        raise RowError(f"{name}={text.strip()!r} is not a whole number") from None
    if value < 0:
        raise RowError(f"{name}={value} is negative")
    return float(value)


def array_tasks(expression: str) -> list[int]:
    """The task ids of an array expression: ``5-9``, ``1,3,5-7``, ``1-7:2``,
    any of them with a ``%N`` throttle (how many may run at once)."""
    tasks = []
    for part in expression.split("%", 1)[0].split(","):
        bounds, _, step = part.strip().partition(":")
        first, _, last = bounds.partition("-")
        try:
            first_id, last_id = int(first), int(last or first)
            stride = int(step) if step else 1
        except ValueError:
            raise RowError(f"cannot read array tasks {expression!r}") from None
        if last_id < first_id or stride < 1:
            raise RowError(f"cannot read array tasks {expression!r}")
        tasks.extend(range(first_id, last_id + 1, stride))
    return tasks
