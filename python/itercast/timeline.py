"""The operator timeline of a trace: iterations, the op sequence, GPU work and labels.

``read_timeline(path)`` scans a trace straight into, per iteration, the
ordered outermost framework ops with their device work, the (duration, gap)
labels that add up to the iteration time, and a structural feature vector.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from itercast import _native
from itercast.trace import CHUNK_SIZE, MISSING, Source, scan_source

PHASES = ("forward", "backward", "optimizer")
#: (name, meaning) of every per-op feature column, in order.
FEATURE_COLUMNS: list[tuple[str, str]] = _native.feature_columns()
#: Version of the feature layout and meaning; models record it and refuse another (its history:
#: csrc/timeline/feature_schema.hpp).
FEATURE_SCHEMA_VERSION: int = _native.FEATURE_SCHEMA_VERSION


@dataclass(frozen=True)
class Hardware:
    """What the ops ran on: a GPU from deviceProperties, or a CPU the caller names."""

    name: str
    kind: str = "gpu"  # "gpu" or "cpu"
    sm_count: int = 0
    memory_gb: float = 0.0
    compute_capability: float = 0.0
    threads: int = 0

    @classmethod
    def from_device_properties(cls, device: dict) -> "Hardware":
        major, minor = device.get("computeMajor", 0) or 0, device.get("computeMinor", 0) or 0
        return cls(name=str(device.get("name", "")), kind="gpu", sm_count=int(device.get("numSms", 0) or 0),
                   memory_gb=float(device.get("totalGlobalMem", 0) or 0) / 2**30,
                   compute_capability=float(f"{major}.{minor}"))

    @classmethod
    def cpu(cls, name: str, threads: int) -> "Hardware":
        return cls(name=name, kind="cpu", threads=int(threads))

    def as_features(self) -> dict[str, float]:
        return {"hw_is_gpu": float(self.kind == "gpu"), "hw_sm_count": float(self.sm_count),
                "hw_memory_gb": self.memory_gb, "hw_compute_capability": self.compute_capability,
                "hw_cpu_threads": float(self.threads)}

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}" + (f":{self.threads}t" if self.kind == "cpu" else "")


@dataclass(frozen=True)
class Iteration:
    """One iteration: its label, GPU totals, and the slice of ops it holds."""

    index: int
    name: str
    start_ns: int
    dur_ns: int
    gpu_busy_ns: int
    kernels: int
    kernels_linked: int
    head_ns: int
    tail_ns: int
    ops: slice
    device_timeline: bool


class Timeline:
    """Ops (outermost framework operators in start order) and iterations of one trace."""

    def __init__(self, native: Any, name: str | None = None):
        self.ops = native.ops()
        self.features = native.features()
        self._iterations = native.iterations()
        self.strings: list[str] = native.strings()
        self.raw_metadata = dict(native.metadata())
        self.kernels_total = native.kernels_total
        self.kernels_linked = native.kernels_linked
        #: kernels whose launch (runtime call) is not in the trace: started before profiling
        self.kernels_unlaunched = native.kernels_unlaunched
        self.threads = native.threads()
        self.nbytes = native.bytes_fed
        self.path = name

    def __repr__(self) -> str:
        return (f"<Timeline {self.path or ''}: {len(self.iterations)} iterations, "
                f"{len(self.ops['name'])} ops, {self.kernels_linked}/{self.kernels_total} kernels linked>")

    @cached_property
    def metadata(self) -> dict[str, Any]:
        return {key: json.loads(raw) for key, raw in self.raw_metadata.items()}

    @cached_property
    def iterations(self) -> list[Iteration]:
        cols = self._iterations
        out = []
        for i in range(len(cols["start_ns"])):
            name_id = int(cols["name"][i])
            first, count = int(cols["first_op"][i]), int(cols["op_count"][i])
            out.append(Iteration(
                index=i, name=self.strings[name_id] if name_id >= 0 else "(whole trace)",
                start_ns=int(cols["start_ns"][i]), dur_ns=int(cols["duration_ns"][i]),
                gpu_busy_ns=int(cols["gpu_busy_ns"][i]), kernels=int(cols["kernels"][i]),
                kernels_linked=int(cols["kernels_linked"][i]), head_ns=int(cols["head_ns"][i]),
                tail_ns=int(cols["tail_ns"][i]), ops=slice(first, first + count),
                device_timeline=bool(cols["device_timeline"][i])))
        return out

    def hardware(self, cpu: Hardware | None = None) -> Hardware:
        """The device the kernels ran on (from deviceProperties), else ``cpu``, else an unnamed CPU."""
        devices = self.metadata.get("deviceProperties") or []
        if devices and self.kernels_total:
            return Hardware.from_device_properties(devices[0])
        return cpu or Hardware.cpu("unknown", 0)

    def op_names(self) -> np.ndarray:
        table = np.array(self.strings + [""], dtype=object)
        ids = self.ops["name"]
        return table[np.where(ids < 0, len(self.strings), ids)]

    def op_table(self, hardware: Hardware | None = None):
        """The ops as a pandas DataFrame: labels, device work, features and the hardware descriptor."""
        import pandas as pd

        columns = {key: value for key, value in self.ops.items() if key not in ("input_dims", "input_types")}
        frame = pd.DataFrame(columns)
        frame.insert(1, "op", self.op_names())
        frame["phase"] = pd.Categorical.from_codes(self.ops["phase"], categories=PHASES)
        frame["input_dims"] = [self.strings[i] if i >= 0 else None for i in self.ops["input_dims"].tolist()]
        frame["input_types"] = [self.strings[i] if i >= 0 else None for i in self.ops["input_types"].tolist()]
        for key in ("device_start_ns", "device_end_ns"):
            frame[key] = frame[key].where(frame[key] != MISSING)
        features = pd.DataFrame(self.features, columns=[name for name, _ in FEATURE_COLUMNS])
        hw = (hardware or self.hardware()).as_features()
        for key, value in hw.items():
            features[key] = value
        return pd.concat([frame, features], axis=1)


def canonical_names(names) -> list[str]:
    """Op names as the features see them (autograd wrapper prefix and node version removed)."""
    return [_native.canonical_op_name(name) for name in names]


def read_timeline(source: Source, chunk_size: int = CHUNK_SIZE) -> Timeline:
    """Scans a trace (path or bytes) into its operator :class:`Timeline`."""
    native = _native.Timeline()
    name = scan_source(native, source, chunk_size)
    return Timeline(native, name)


def op_table(source: Source, hardware: Hardware | None = None):
    """The ops of a trace as a pandas DataFrame (see :meth:`Timeline.op_table`)."""
    return read_timeline(source).op_table(hardware)
