"""Labelled configurations (from a collection manifest) and their featurised traces."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from itercast.errors import ItercastError
from itercast.features import DEFAULT_STRIDE, DEFAULT_WIDTH, Windows, timeline_and_windows


@dataclass(frozen=True)
class Config:
    """One measured configuration: a model at a batch size on some hardware."""

    config_id: str
    model: str
    family: str
    hardware: str  # key: one model is trained per hardware
    trace_path: Path
    step_ms: float  # median wall time of un-profiled steps: what the job experiences
    profiled_step_ms: float  # median ProfilerStep duration in the trace
    batch_size: int = 0
    line: str = ""  # the architecture line (the manifest's `arch`): a model's size variants share it
    label_passes: int = 1  # measurements step_ms is the median of (the collection's label passes)
    label_spread: float = 0.0  # mean |measurement / step_ms - 1| over them: how far one pass strays


def hardware_key(row: dict) -> str:
    """The hardware a manifest row was measured on: device name, plus threads on CPU."""
    device = row.get("device") or "cpu"
    name = row.get("device_name") or row.get("cpu_model") or "unknown"
    if device == "cpu":
        return f"cpu:{row.get('cpu_model') or name}:{row.get('threads') or 0}t"
    return f"{device}:{name}"


@dataclass
class Dataset:
    configs: list[Config]
    source: Path | None = None

    @classmethod
    def from_manifest(cls, path: str | Path) -> "Dataset":
        """Reads a collection manifest (the CSV, or the directory holding manifest.csv); keeps status ok."""
        path = Path(path)
        manifest = path / "manifest.csv" if path.is_dir() else path
        if not manifest.exists():
            raise ItercastError(f"no manifest at {manifest}: pass a collection directory or its manifest.csv")
        configs = []
        passes = label_passes(manifest.parent / "labels.csv")
        with open(manifest, newline="") as handle:
            for line, row in enumerate(csv.DictReader(handle), start=2):
                if row.get("status") != "ok":
                    continue
                try:
                    step_ms = np.array([float(row["step_ms"])] + passes.get(row["config_id"], []))
                    label = float(np.median(step_ms))
                    configs.append(Config(
                        config_id=row["config_id"], model=row["model"], family=row.get("family", ""),
                        hardware=hardware_key(row), trace_path=manifest.parent / row["trace_path"],
                        step_ms=label, profiled_step_ms=float(row["profiled_step_ms"]),
                        batch_size=int(row.get("batch_size") or 0), line=row.get("arch") or row["model"],
                        label_passes=len(step_ms), label_spread=float(np.mean(np.abs(step_ms / label - 1)))))
                except (KeyError, ValueError) as error:
                    raise ItercastError(f"{manifest}, line {line}: bad row ({error})") from None
        if not configs:
            raise ItercastError(f"{manifest} has no configuration with status ok")
        return cls(configs, manifest)

    def __len__(self) -> int:
        return len(self.configs)

    def hardware_keys(self) -> list[str]:
        return sorted({c.hardware for c in self.configs})

    def for_hardware(self, key: str) -> "Dataset":
        return Dataset([c for c in self.configs if c.hardware == key], self.source)


def label_passes(path: Path) -> dict[str, list[float]]:
    """Each configuration's step_ms from the collection's extra label passes (labels.csv), if any."""
    passes: dict[str, list[float]] = {}
    if not path.exists():
        return passes
    with open(path, newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            if row.get("status") != "ok":
                continue
            try:
                passes.setdefault(row["config_id"], []).append(float(row["step_ms"]))
            except (KeyError, ValueError) as error:
                raise ItercastError(f"{path}, line {line}: bad row ({error})") from None
    return passes


@dataclass
class TraceSample:
    """A featurised trace: windows of one iteration plus what labels it needs."""

    config: Config | None
    windows: Windows
    op_count: int
    head_tail_ns: float  # outside the first and last op
    profiled_ns: float  # the ProfilerStep duration of that iteration
    op_names: list[str] = field(default_factory=list)  # canonical names of its ops
    hardware_name: str = ""


def _iteration_to_keep(timeline) -> int:
    """The median-duration iteration: one representative per trace (others are repeats)."""
    durations = np.array([it.dur_ns for it in timeline.iterations], dtype=float)
    if len(durations) == 0:
        raise ItercastError(f"{timeline.path}: no iteration found")
    return int(np.argsort(durations)[len(durations) // 2])


def sample_from_trace(source, config: Config | None = None, width: int = DEFAULT_WIDTH,
                      stride: int = DEFAULT_STRIDE, iteration: int | None = None) -> TraceSample:
    from itercast.timeline import canonical_names

    timeline, windows = timeline_and_windows(source, width, stride)
    index = _iteration_to_keep(timeline) if iteration is None else iteration
    it = timeline.iterations[index]
    keep = windows.index[:, 0] == index
    part = Windows(windows.x[keep], windows.y[keep], windows.y_sum[keep], windows.index[keep],
                   width, stride, windows.columns)
    names = canonical_names(timeline.op_names()[it.ops])
    return TraceSample(config, part, it.ops.stop - it.ops.start, float(it.head_ns + it.tail_ns),
                       float(it.dur_ns), names, timeline.hardware().name)


def featurise(configs: Iterable[Config], width: int = DEFAULT_WIDTH, stride: int = DEFAULT_STRIDE,
              client=None) -> list[TraceSample]:
    """Featurises every configuration's trace, in process or on a Dask cluster (``client``)."""
    configs = list(configs)
    if client is None:
        return [sample_from_trace(c.trace_path, c, width, stride) for c in configs]
    futures = client.map(sample_from_trace, [c.trace_path for c in configs], configs,
                         width=width, stride=stride, pure=False)
    return client.gather(futures)


def group_labels(samples: Sequence[TraceSample], split: str) -> np.ndarray:
    """The group of each sample for a split: by architecture (model), by architecture line (a model and its
    size variants: resnet18, resnet34, ... together) or by configuration."""
    if split == "arch":
        return np.array([s.config.model for s in samples])
    if split == "line":
        return np.array([s.config.line or s.config.model for s in samples])
    if split == "config":
        return np.array([s.config.config_id for s in samples])
    raise ItercastError(f"unknown split {split!r}: use 'arch', 'line' or 'config'")
