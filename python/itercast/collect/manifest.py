"""The manifest: one CSV row per configuration, appended as each one finishes."""

from __future__ import annotations

import csv
from pathlib import Path

from itercast.errors import ItercastError

STATUSES = ("ok", "oom", "timeout", "error")

# Column -> type; every row carries every column (None where not measured).
COLUMNS = {
    "config_id": str,
    "model": str,
    "family": str,
    "arch": str,
    "params": int,
    "batch_size": int,
    "input_size": int,
    "input_unit": str,
    "input_shape": str,  # per input, without the batch dimension, e.g. "3x32x32" or "13;26x8"
    "dtype": str,
    "optimizer": str,
    "device": str,
    "device_name": str,
    "cpu_model": str,
    "threads": int,
    "torch_version": str,
    "step_ms": float,  # median wall time of un-profiled steps
    "step_ms_iqr": float,
    "step_ms_min": float,
    "step_ms_max": float,
    "steps": int,
    "profiled_step_ms": float,  # median ProfilerStep# duration over the active steps
    "profiled_step_ms_iqr": float,
    "profiled_step_ms_min": float,
    "profiled_step_ms_max": float,
    "profiled_steps": int,
    "trace_path": str,  # relative to the output directory
    "status": str,  # one of STATUSES
    "message": str,
    "elapsed_s": float,  # wall time of the whole configuration, build included
    "finished_at": str,
}


def _parse(column: str, text: str):
    if text == "":
        return None
    return COLUMNS[column](text)


class Manifest:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._check_header()

    def _check_header(self):
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, newline="") as handle:
            header = next(csv.reader(handle), [])
        if header != list(COLUMNS):
            raise ItercastError(f"{self.path} has other columns than this version writes; "
                                "collect into a new directory")

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, newline="") as handle:
            return [{column: _parse(column, row[column]) for column in COLUMNS}
                    for row in csv.DictReader(handle)]

    def finished_ids(self) -> set[str]:
        """Every recorded status is final, so any recorded configuration is skipped on rerun."""
        return {row["config_id"] for row in self.rows()}

    def append(self, row: dict):
        new_file = not self.path.exists() or self.path.stat().st_size == 0
        with open(self.path, "a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
            if new_file:
                writer.writeheader()
            writer.writerow({column: "" if row.get(column) is None else row[column]
                             for column in COLUMNS})
