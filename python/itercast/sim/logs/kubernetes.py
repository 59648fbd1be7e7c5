"""Kubernetes pods as jobs: Alibaba's ``openb_pod_list`` CSV
(cluster-trace-gpu-v2023) and ``kubectl get pods -A -o json`` output.

A pod is submitted when it is created and starts when it is scheduled
(its GPUs are bound to it then); it ends when the openb trace deletes it,
or, in kubectl's list, when its last container finished (phase Succeeded or
Failed). A pod still Running or Pending in the list has no end yet."""

from __future__ import annotations

import csv
import json
import math
import re
from json.decoder import scanstring
from pathlib import Path
from typing import Any

from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import JobLog
from itercast.sim.logs.common import NAN, BadRows, LogJob, RowError, check_order, iso_time, job_log, number

OPENB_COLUMNS = ("name", "num_gpu", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
GPU_RESOURCE = "nvidia.com/gpu"
FRACTION_ANNOTATION = "gpu-fraction"  # the KAI Scheduler's (Run:ai's) share of one GPU, e.g. "0.5"
FINISHED_PHASES = ("Succeeded", "Failed")


def read_openb(path: Path, strict: bool) -> JobLog:
    bad_rows = BadRows(path, strict)
    jobs = []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        reader.fieldnames = [name.strip() for name in (reader.fieldnames or ())]
        missing = [name for name in OPENB_COLUMNS if name not in reader.fieldnames]
        if missing:
            raise WorkloadError(f"not an openb pod list: the header lacks {', '.join(missing)}", str(path), 1)
        for row in reader:
            try:
                jobs.append(_openb_pod(row, reader.line_num))
            except RowError as error:
                bad_rows.reject(reader.line_num, str(error))
    return job_log(jobs, path=path, fmt="k8s-pods", bad_rows=bad_rows)


def _openb_pod(row: dict, line: int) -> LogJob:
    if None in row or None in row.values():
        raise RowError("wrong number of fields")
    created = number(row["creation_time"], "creation_time")
    # 0 (or empty) means "not yet", except a pod scheduled at the trace's first instant.
    scheduled = _openb_time(row["scheduled_time"], "scheduled_time", zero_is_time=created == 0)
    deleted = _openb_time(row["deletion_time"], "deletion_time", zero_is_time=False)
    gpus = number(row["num_gpu"], "num_gpu")
    if gpus < 0 or gpus != int(gpus):
        raise RowError(f"num_gpu {row['num_gpu'].strip()!r} is not a count of GPUs")
    milli_text = (row.get("gpu_milli") or "").strip()
    milli = number(milli_text, "gpu_milli") if milli_text else 1000.0
    share = milli / 1000.0 if gpus == 1 and 0 < milli < 1000 else gpus  # GPU sharing: num_gpu is 1
    return check_order(LogJob(row["name"].strip(), created, scheduled, deleted, share, "",
                              row["pod_phase"].strip(), line))


def _openb_time(text: str, column: str, zero_is_time: bool) -> float:
    text = text.strip()
    if not text:
        return NAN
    value = number(text, column)
    return NAN if value == 0 and not zero_is_time else value


def read_kubectl(path: Path, strict: bool) -> JobLog:
    bad_rows = BadRows(path, strict)
    jobs = []
    for index, (line, item) in enumerate(_pod_items(path), start=1):
        try:
            jobs.append(_pod(item, line))
        except RowError as error:
            bad_rows.reject(line, f"item {index}{_pod_name(item)}: {error}")
    return job_log(jobs, path=path, fmt="kubectl", bad_rows=bad_rows)


def _pod_name(item: Any) -> str:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return ""
    return f" (pod {metadata.get('namespace', '')}/{metadata['name']})"


def _pod(item: Any, line: int) -> LogJob:
    if not isinstance(item, dict):
        raise RowError("not a JSON object")
    metadata, spec, status = (_object(item, key) for key in ("metadata", "spec", "status"))
    name = metadata.get("name")
    if not name:
        raise RowError("no metadata.name")
    namespace = str(metadata.get("namespace") or "")
    created = _timestamp(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
    if math.isnan(created):
        raise RowError("no metadata.creationTimestamp")
    phase = str(status.get("phase") or "")
    return check_order(LogJob(f"{namespace}/{name}" if namespace else str(name), created, _scheduled(status),
                              _finished(status, phase, metadata), pod_gpus(spec, metadata), namespace, phase, line))


def _object(item: dict, key: str) -> dict:
    value = item.get(key) or {}
    if not isinstance(value, dict):
        raise RowError(f"{key} is not an object")
    return value


def _timestamp(value: Any, where: str) -> float:
    if value is None or value == "":
        return NAN
    if not isinstance(value, str):
        raise RowError(f"{where} {value!r} is not a date/time")
    return iso_time(value, where)


def _scheduled(status: dict) -> float:
    """When the pod was bound to a node (its PodScheduled condition turned
    True), else the kubelet's ``startTime``; NaN when neither is there."""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled" \
                and condition.get("status") == "True":
            return _timestamp(condition.get("lastTransitionTime"), "PodScheduled lastTransitionTime")
    return _timestamp(status.get("startTime"), "status.startTime")


def _finished(status: dict, phase: str, metadata: dict) -> float:
    """A finished pod's end: its last container's ``finishedAt``, else its last
    condition change or deletion; NaN for a pod not finished."""
    if phase not in FINISHED_PHASES:
        return NAN
    finished = [_timestamp(((entry.get("state") or {}).get("terminated") or {}).get("finishedAt"), "finishedAt")
                for entry in status.get("containerStatuses") or () if isinstance(entry, dict)]
    finished = [moment for moment in finished if not math.isnan(moment)]
    if finished:
        return max(finished)
    changes = [_timestamp(condition.get("lastTransitionTime"), "lastTransitionTime")
               for condition in status.get("conditions") or () if isinstance(condition, dict)]
    changes = [moment for moment in changes if not math.isnan(moment)]
    deleted = _timestamp(metadata.get("deletionTimestamp"), "metadata.deletionTimestamp")
    if changes or not math.isnan(deleted):
        return max(changes + ([] if math.isnan(deleted) else [deleted]))
    raise RowError(f"phase {phase} but no container finishedAt, condition or deletion time")


def pod_gpus(spec: dict, metadata: dict) -> float:
    """Whole GPUs (``nvidia.com/gpu``: containers' sum, or the largest init
    container's if more, as Kubernetes sizes a pod), else the pod's
    ``gpu-fraction`` annotation (a share of one GPU); 0 for a CPU-only pod."""
    containers = sum(_container_gpus(container) for container in spec.get("containers") or ())
    init = max((_container_gpus(container) for container in spec.get("initContainers") or ()), default=0.0)
    whole = max(containers, init)
    fraction = (metadata.get("annotations") or {}).get(FRACTION_ANNOTATION)
    if whole > 0 or fraction is None:
        return whole
    try:
        share = float(fraction)
    except (TypeError, ValueError):
        raise RowError(f"annotation {FRACTION_ANNOTATION} {fraction!r} is not a number") from None
    if not 0 < share <= 1:
        raise RowError(f"annotation {FRACTION_ANNOTATION} {fraction!r} is not a share of one GPU in (0, 1]")
    return share


def _container_gpus(container: Any) -> float:
    resources = (container.get("resources") if isinstance(container, dict) else None) or {}
    for kind in ("limits", "requests"):  # an extended resource's request equals its limit when both are set
        value = (resources.get(kind) or {}).get(GPU_RESOURCE)
        if value is not None:
            if not re.fullmatch(r"\d+", str(value).strip()):
                raise RowError(f"{kind} {GPU_RESOURCE} {value!r} is not a whole number of GPUs")
            return float(value)
    return 0.0


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _pod_items(path: Path) -> list[tuple[int, Any]]:
    """(line where it starts, pod) of each item of a kubectl list, or the one pod of ``kubectl get pod -o json``."""
    text = path.read_text()
    try:
        document, offsets = _top_level(text)
    except json.JSONDecodeError as error:
        raise WorkloadError(f"not JSON: {error.msg}", str(path), error.lineno) from None
    if document.get("kind") == "Pod":
        return [(1, document)]
    if not isinstance(document.get("items"), list):
        raise WorkloadError('not a kubectl pod list: no "items" array (write one with: kubectl get pods -A -o json)',
                            str(path), 1)
    return list(zip(_line_numbers(text, offsets), document["items"]))


def _line_numbers(text: str, offsets: list[int]) -> list[int]:
    lines, line, counted = [], 1, 0
    for offset in offsets:  # increasing
        line += text.count("\n", counted, offset)
        counted = offset
        lines.append(line)
    return lines


def _top_level(text: str) -> tuple[dict, list[int]]:
    """The top-level JSON object, and where in ``text`` each element of its
    ``items`` array begins (json.loads gives no positions)."""
    position = _skip(text, 0)
    if not text.startswith("{", position):
        raise json.JSONDecodeError("expected a JSON object", text, position)
    document, offsets = {}, []
    position = _skip(text, position + 1)
    while not text.startswith("}", position):
        if not text.startswith('"', position):
            raise json.JSONDecodeError("expected a key", text, position)
        key, position = scanstring(text, position + 1)
        position = _skip(text, position)
        if not text.startswith(":", position):
            raise json.JSONDecodeError("expected ':'", text, position)
        position = _skip(text, position + 1)
        if key == "items" and text.startswith("[", position):
            document[key], offsets, position = _array(text, position)
        else:
            document[key], position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
        elif not text.startswith("}", position):
            raise json.JSONDecodeError("expected ',' or '}'", text, position)
    if _skip(text, position + 1) != len(text):
        raise json.JSONDecodeError("extra data", text, _skip(text, position + 1))
    return document, offsets


def _array(text: str, position: int) -> tuple[list, list[int], int]:
    values, offsets = [], []
    position = _skip(text, position + 1)
    while not text.startswith("]", position):
        offsets.append(position)
        value, position = _DECODER.raw_decode(text, position)
        values.append(value)
        position = _skip(text, position)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
        elif not text.startswith("]", position):
            raise json.JSONDecodeError("expected ',' or ']'", text, position)
    return values, offsets, position + 1


def _skip(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()
