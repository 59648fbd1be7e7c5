"""Errors of the cluster simulator; all are user errors the CLI reports."""

from __future__ import annotations

from itercast.errors import ItercastError


class WorkloadError(ItercastError, ValueError):
    """A workload file cannot be read; names the file and, when known, the line."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        where = ":".join(str(part) for part in (path, line) if part is not None)
        super().__init__(f"{where}: {message}" if where else message)


class SimConfigError(ItercastError, ValueError):
    """A simulator configuration field has an invalid value."""


class UnschedulableJobError(ItercastError, ValueError):
    """A job needs more GPUs than any pool of the cluster has, so it could never run."""
