"""Readers of cluster schedulers' own logs (Slurm's sacct, Alibaba PAI's
tables, Kubernetes pod lists) into a ``JobLog``; docs/sim.md, "Operators'
logs: Slurm, PAI, Kubernetes"."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable, Optional

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import JobLog
from itercast.sim.logs.kubernetes import OPENB_COLUMNS, read_kubectl, read_openb
from itercast.sim.logs.pai import JOB_COLUMNS as PAI_JOB_COLUMNS, pai_tables, read_pai
from itercast.sim.logs.slurm import SEPARATOR, read_slurm

LOG_FORMATS: dict[str, Callable[[Path, bool], JobLog]] = {
    "slurm": read_slurm,
    "pai": read_pai,
    "k8s-pods": read_openb,
    "kubectl": read_kubectl,
}
_SNIFF_BYTES = 65536


def load_job_log(path, fmt: Optional[str] = None, *, strict: bool = False) -> JobLog:
    """Reads a scheduler's log: ``fmt`` one of ``LOG_FORMATS``, or None to tell
    it from the content. A row that cannot be a job is skipped and listed in
    ``bad_rows`` (``strict``: a ``WorkloadError`` naming its file and line)."""
    path = Path(path)
    if not path.exists():
        raise WorkloadError("no such file or directory", str(path))
    detected = detect_log_format(path)
    if fmt is None:
        if detected is None:
            raise WorkloadError(f"not a scheduler log this reads ({', '.join(LOG_FORMATS)}): see docs/sim.md, "
                                f"\"Operators' logs\"", str(path))
        fmt = detected
    elif fmt not in LOG_FORMATS:
        raise WorkloadError(f"unknown log format {fmt!r}; use one of {', '.join(LOG_FORMATS)}", str(path))
    elif detected is not None and detected != fmt:
        raise WorkloadError(f"not {fmt} input: it reads as {detected} (give --format {detected}, or none)",
                            str(path))
    try:
        return LOG_FORMATS[fmt](path, strict)
    except UnicodeDecodeError as error:
        raise WorkloadError(f"not a text file ({error.reason})", str(path)) from None
    except IsADirectoryError:
        raise WorkloadError("a directory; only the pai format reads one", str(path)) from None


def detect_log_format(path) -> Optional[str]:
    """The log format of ``path`` by its first line (None for anything else,
    e.g. a Philly, Tiresias or Helios CSV): a ``|``-separated header with JobID
    and Submit is Slurm's; a JSON object kubectl's; openb's header its pod
    list; PAI's job table by its header, or a header-less row of six fields
    with the task table beside it (or a directory holding both tables)."""
    path = Path(path)
    if path.is_dir():
        tables = pai_tables(path)
        return "pai" if tables is not None and tables[1].is_file() else None
    first = _first_line(path)
    if first is None:
        return None
    if first.lstrip().startswith("{"):
        return "kubectl"
    if SEPARATOR in first and {"JobID", "Submit"} <= {name.strip() for name in first.split(SEPARATOR)}:
        return "slurm"
    fields = [field.strip() for field in next(csv.reader([first]), [])]
    if set(OPENB_COLUMNS) <= set(fields):
        return "k8s-pods"
    if fields == list(PAI_JOB_COLUMNS):
        return "pai"
    tables = pai_tables(path)
    if len(fields) == len(PAI_JOB_COLUMNS) and tables is not None and tables[1].is_file():
        return "pai"
    return None


def _first_line(path: Path) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].rstrip(b"\r")
    try:
        return first.decode("utf-8") if first.strip() else None
    except UnicodeDecodeError:
        return None
