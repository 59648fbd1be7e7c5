"""The manifest: one CSV row per configuration, appended as each one finishes."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from itercast.errors import ItercastError

STATUSES = ("ok", "oom", "timeout", "error")
MANIFEST_NAME = "manifest.csv"  # in the collection's directory
LABELS_NAME = "labels.csv"  # beside it: the label passes (LABEL_COLUMNS)


def config_id(model: str, batch_size: int, input_size: int, dtype: str, device: str, threads: int) -> str:
    """Stable and readable: the same configuration always gets the same id (and trace name)."""
    device = re.sub(r"[^A-Za-z0-9]", "", device)
    return f"{model}-b{batch_size}-s{input_size}-{dtype}-{device}-t{threads}"


def work_id(config: str) -> str:
    """A configuration id without its device and threads: the same work on any hardware."""
    return config.rsplit("-", 2)[0]

# The reference workload timed around a configuration's un-profiled steps (collect.measure.ReferenceWorkload):
# the machine's speed then, median ms in all and per part.
REFERENCE_COLUMNS = ("reference_ms", "reference_compute_ms", "reference_memory_ms", "reference_overhead_ms")

# How a label was timed (collect.measure.Protocol.label_protocol); a collection holds one protocol.
LABEL_PROTOCOLS = ("fresh-loop", "paired-rounds", "wall")
# Protocols whose label is label_ratio times the collection's median reference step (predict.dataset.Labeller).
RATIO_PROTOCOLS = ("fresh-loop", "paired-rounds")
# A collection from before the label protocol was recorded timed its labels as "wall" does.
DEFAULT_LABEL_PROTOCOL = "wall"
LABEL_PROTOCOL_COLUMNS = {
    "label_protocol": str,
    # "paired-rounds": the median ratio of a configuration step to the reference step timed just before it,
    # over every pair; the label is this times the collection's median reference step (predict.dataset).
    "label_ratio": float,
    "label_reference_ms": float,  # median reference step of its pairs
    "label_spread": float,  # interquartile range of the rounds' median ratios over label_ratio
    "label_rounds": int,
}

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
    **LABEL_PROTOCOL_COLUMNS,
    **{column: float for column in REFERENCE_COLUMNS},
    # The reference step timed right before and after the profiled steps, mean ms per run ("fresh-loop"): the
    # machine's speed as the trace was taken (predict.dataset divides the trace's times by it).
    "profile_reference_ms": float,
    "profiled_step_ms": float,  # median ProfilerStep# duration over the active steps
    "profiled_step_ms_iqr": float,
    "profiled_step_ms_min": float,
    "profiled_step_ms_max": float,
    "profiled_steps": int,
    "trace_path": str,  # relative to the output directory
    "status": str,  # one of STATUSES
    "message": str,
    "elapsed_s": float,  # wall time of its block (build included) over the configurations it measured
    "finished_at": str,
}


# Label passes (labels.csv beside the manifest): the un-profiled steps of ok configurations timed
# again, each pass over the whole grid after the previous, so that a label is the median of
# measurements minutes apart rather than of one run's steps. Pass 0 is the manifest's own.
LABEL_COLUMNS = {
    "config_id": str,
    "label_pass": int,  # 1, 2, ...
    "step_ms": float,
    "step_ms_iqr": float,
    "step_ms_min": float,
    "step_ms_max": float,
    "steps": int,
    **LABEL_PROTOCOL_COLUMNS,
    **{column: float for column in REFERENCE_COLUMNS},
    "status": str,
    "message": str,
    "finished_at": str,
}


class Manifest:
    """An append-only CSV of typed rows: the manifest, or with ``columns=LABEL_COLUMNS`` the label passes."""

    def __init__(self, path: Path, columns: dict = COLUMNS):
        self.path = Path(path)
        self.columns = columns
        self.file_columns = self._file_columns()

    def _parse(self, column: str, text: str):
        return None if text == "" else self.columns[column](text)

    def _file_columns(self) -> list[str]:
        """The columns rows are written in: this version's, or those of a file collected before the
        label protocol, the reference workload or the profile's reference, which is resumed without them."""
        current = list(self.columns)
        if not self.path.exists() or self.path.stat().st_size == 0:
            return current
        with open(self.path, newline="") as handle:
            header = next(csv.reader(handle), [])
        if header not in self._earlier_headers(current):
            raise ItercastError(f"{self.path} has other columns than this version writes; "
                                "collect into a new directory")
        return header

    @staticmethod
    def _earlier_headers(current: list[str]) -> list[list[str]]:
        """This version's columns, and each earlier version's: the groups added since, newest first, left out."""
        added = ({"profile_reference_ms"}, set(LABEL_PROTOCOL_COLUMNS), set(REFERENCE_COLUMNS))
        headers, dropped = [current], set()
        for group in added:
            dropped |= group
            headers.append([column for column in current if column not in dropped])
        return headers

    def rows(self) -> list[dict]:
        """Every row with every column of this version (None where the file has no such column)."""
        if not self.path.exists():
            return []
        with open(self.path, newline="") as handle:
            return [{column: self._parse(column, row.get(column) or "") for column in self.columns}
                    for row in csv.DictReader(handle)]

    def label_protocols(self) -> dict[str, list[str]]:
        """Label protocol -> the ids of the ok rows timed with it."""
        protocols: dict[str, list[str]] = {}
        for row in self.rows():
            if row["status"] == "ok":
                protocols.setdefault(row.get("label_protocol") or DEFAULT_LABEL_PROTOCOL, []).append(row["config_id"])
        return protocols

    def finished_ids(self) -> set[str]:
        """Every recorded status is final, so any recorded configuration is skipped on rerun."""
        return {row["config_id"] for row in self.rows()}

    def append(self, row: dict):
        new_file = not self.path.exists() or self.path.stat().st_size == 0
        with open(self.path, "a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self.file_columns)
            if new_file:
                writer.writeheader()
            writer.writerow({column: "" if row.get(column) is None else row[column]
                             for column in self.file_columns})


def ok_rows(path: Path) -> list[tuple[int, dict]]:
    """(line, row) of the rows with status ok of a manifest or label-pass file, each row its text by column
    as the file has them (missing columns absent); none when there is no such file."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        return [(line, row) for line, row in enumerate(csv.DictReader(handle), start=2) if row.get("status") == "ok"]
