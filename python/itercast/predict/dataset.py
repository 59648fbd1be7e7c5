"""Labelled configurations (from a collection manifest) and their featurised traces."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from itercast.collect.manifest import DEFAULT_LABEL_PROTOCOL, LABELS_NAME, MANIFEST_NAME, RATIO_PROTOCOLS, ok_rows
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
    slowdown: float = 1.0  # how much slower than usual the machine ran as the trace was recorded
    # (MachineSpeed.slowdown): the trace's times and the trace pass's labels are divided by it


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
    machine_speed: MachineSpeed | None = None  # how measurements were divided by the machine's speed, if fitted
    label_protocol: str = DEFAULT_LABEL_PROTOCOL  # how its labels were timed (collect.manifest.LABEL_PROTOCOLS)
    label_floor: LabelFloor | None = None  # how far a repeat label pass lands from the first: None without one

    @classmethod
    def from_manifest(cls, path: str | Path, machine_speed: bool = True) -> "Dataset":
        """Reads a collection manifest (the CSV, or the directory holding manifest.csv); keeps status ok.

        ``machine_speed``: divide each measurement by the machine's speed then (:class:`MachineSpeed`),
        where the collection timed the reference workload next to its label passes.
        """
        path = Path(path)
        manifest = path / MANIFEST_NAME if path.is_dir() else path
        if not manifest.exists():
            raise ItercastError(f"no manifest at {manifest}: pass a collection directory or its manifest.csv")
        rows = ok_rows(manifest)
        labels_path = manifest.parent / LABELS_NAME
        pass_rows = ok_rows(labels_path)
        protocol = one_label_protocol(manifest, rows, labels_path, pass_rows)
        speed = MachineSpeed.fit(rows, pass_rows) if machine_speed else None
        slowdown = speed.slowdown if speed else (lambda row: 1.0)
        measured = Labeller(rows, slowdown, protocol)
        trace_slowdown = ProfileSpeed(measured.reference_ms, slowdown) if machine_speed else slowdown
        first_pass = {row.get("config_id"): measured(row, manifest, line) for line, row in rows}
        passes = label_passes(labels_path, pass_rows, first_pass, measured)
        configs = []
        for line, row in rows:
            try:
                step_ms = np.array([first_pass[row["config_id"]]] + passes.get(row["config_id"], []))
                label = float(np.median(step_ms))
                configs.append(Config(
                    config_id=row["config_id"], model=row["model"], family=row.get("family", ""),
                    hardware=hardware_key(row), trace_path=manifest.parent / row["trace_path"],
                    step_ms=label,
                    profiled_step_ms=_milliseconds(row, "profiled_step_ms", manifest, line) / trace_slowdown(row),
                    batch_size=int(row.get("batch_size") or 0), line=row.get("arch") or row["model"],
                    label_passes=len(step_ms), label_spread=float(np.mean(np.abs(step_ms / label - 1))),
                    slowdown=trace_slowdown(row)))
            except (KeyError, ValueError) as error:
                raise ItercastError(f"{manifest}, line {line}: bad row ({error})") from None
        if not configs:
            raise ItercastError(f"{manifest} has no configuration with status ok")
        return cls(configs, manifest, speed, protocol, LabelFloor.of(first_pass, passes))

    def __len__(self) -> int:
        return len(self.configs)

    def hardware_keys(self) -> list[str]:
        return sorted({c.hardware for c in self.configs})


def _milliseconds(row: dict, column: str, path: Path, line: int) -> float:
    """A measured time of a row with status ok: a positive, finite number (a zero or NaN label would
    train log-space targets on nothing and score every prediction against it as infinitely wrong)."""
    try:
        value = float(row[column])
    except (KeyError, TypeError, ValueError) as error:
        raise ItercastError(f"{path}, line {line}: bad row ({error!r} in {column})") from None
    if not (math.isfinite(value) and value > 0):
        raise ItercastError(f"{path}, line {line}: bad row ({column} {row[column]!r} is not a positive time "
                            f"in ms; a configuration that did not run needs a status other than ok)")
    return value


# A pass's drift is told from its configurations' own noise only over many of them.
MIN_DRIFT_CONFIGS = 30


def label_passes(path: Path, pass_rows: list[tuple[int, dict]], first_pass: dict[str, float],
                 measured: "Labeller") -> dict[str, list[float]]:
    """Each configuration's label from the collection's extra label passes (``pass_rows``, read from
    labels.csv at ``path``), as ``measured`` reads it.

    The traces were recorded in the manifest's pass, and a shared machine drifts between passes (by
    several percent a pass; docs/decisions.md), so each pass is rescaled by its
    median ratio to ``first_pass`` over the configurations both timed (when there are at least
    MIN_DRIFT_CONFIGS): the passes then average a configuration's own noise, not the machine's drift.
    """
    by_pass: dict[str, dict[str, float]] = {}  # label_pass -> config_id -> label (ms)
    for line, row in pass_rows:
        by_pass.setdefault(row.get("label_pass"), {})[row.get("config_id")] = measured(row, path, line)
    if by_pass and not set().union(*map(set, by_pass.values())) & set(first_pass):
        names = sorted(set().union(*map(set, by_pass.values())))
        raise ItercastError(f"{path}: its label passes cover none of the manifest's configurations (they name "
                            f"{', '.join(names[:3])}{' ...' if len(names) > 3 else ''}): labels.csv belongs to "
                            "another collection")
    passes: dict[str, list[float]] = {}
    for values in by_pass.values():
        ratios = [ms / first_pass[config_id] for config_id, ms in values.items() if config_id in first_pass]
        drift = float(np.median(ratios)) if len(ratios) >= MIN_DRIFT_CONFIGS else 1.0
        for config_id, ms in values.items():
            passes.setdefault(config_id, []).append(ms / drift)
    return passes


def one_label_protocol(manifest: Path, rows, labels_path: Path, pass_rows) -> str:
    """The label protocol of a collection's manifest and label passes; an error naming the configurations
    when they hold two (labels of two protocols are not on one scale)."""
    protocols: dict[str, list[tuple[Path, str]]] = {}
    for path, these in ((manifest, rows), (labels_path, pass_rows)):
        for _, row in these:
            protocols.setdefault(row.get("label_protocol") or DEFAULT_LABEL_PROTOCOL, []).append(
                (path, row.get("config_id")))
    if len(protocols) > 1:
        listed = "; ".join(f"{name}: {', '.join(f'{config} ({path.name})' for path, config in where[:3])}"
                           f"{f' and {len(where) - 3} more' if len(where) > 3 else ''}"
                           for name, where in sorted(protocols.items()))
        raise ItercastError(f"{manifest.parent} mixes label protocols ({listed}); labels of two protocols are not "
                            "on one scale: collect each protocol into its own directory")
    return next(iter(protocols), DEFAULT_LABEL_PROTOCOL)


class Labeller:
    """A manifest or labels.csv row's label (ms). "wall": its step_ms divided by the machine's slowdown then.
    "fresh-loop" and "paired-rounds": its label_ratio (configuration step over the reference step paired with it)
    times the median reference step over the collection's configurations on its hardware: already a ratio to the
    machine's speed at that moment, so no slowdown divides it."""

    def __init__(self, rows, slowdown, protocol: str):
        self.slowdown, self.protocol = slowdown, protocol
        self.hardware = {row.get("config_id"): hardware_key(row) for _, row in rows}
        references: dict[str, list[float]] = {}
        for _, row in rows:
            if _positive(row.get("label_reference_ms")):
                references.setdefault(hardware_key(row), []).append(float(row["label_reference_ms"]))
        self.reference_ms = {key: float(np.median(values)) for key, values in references.items()}

    def __call__(self, row: dict, path: Path, line: int) -> float:
        if self.protocol not in RATIO_PROTOCOLS:
            return _milliseconds(row, "step_ms", path, line) / self.slowdown(row)
        reference = self.reference_ms.get(self.hardware.get(row.get("config_id")))
        if reference is None:
            raise ItercastError(f"{path}, line {line}: bad row ({row.get('config_id')} is not in the manifest "
                                "with a label_reference_ms)")
        return _milliseconds(row, "label_ratio", path, line) * reference


@dataclass(frozen=True)
class LabelFloor:
    """How far a repeat label pass lands from the first: |repeat / first - 1| over the configurations timed
    in both, each pass's drift divided out (label_passes) -- the error two measurements of one label
    have, below which no predictor's error can be told apart."""

    median: float
    p90: float
    configs: int  # configurations measured in two passes or more
    unrepeated: int  # configurations of the manifest no repeat pass measured
    errors: dict[str, float] = field(default_factory=dict, repr=False)  # config id -> mean error of its repeats

    @classmethod
    def of(cls, first_pass: dict[str, float], passes: dict[str, list[float]]) -> "LabelFloor | None":
        errors = {config_id: float(np.mean([abs(repeat / first_pass[config_id] - 1) for repeat in repeats]))
                  for config_id, repeats in passes.items() if config_id in first_pass}
        if not errors:
            return None
        values = list(errors.values())
        return cls(float(np.median(values)), float(np.percentile(values, 90)), len(errors),
                   len(first_pass) - len(errors), errors)

    @property
    def mean(self) -> float:
        """The mean error, to set beside an MRE (a mean too)."""
        return float(np.mean(list(self.errors.values())))

    def describe(self) -> str:
        text = (f"label floor: a repeat label pass differs from the first by {self.median:.1%} "
                f"(median; mean {self.mean:.1%}, p90 {self.p90:.1%}) over {self.configs} configurations")
        if self.unrepeated:
            text += f" ({self.unrepeated} not repeated)"
        return text


@dataclass(frozen=True)
class MachineSpeed:
    """How a collection's measurements are divided by the machine's speed when they were taken.

    A collection times a fixed reference workload next to every measurement (collect.measure.ReferenceWorkload).
    A row's slowdown is (its reference time / the median reference time on its hardware) ** ``exponent``.
    The exponent is fitted on the label passes, the only measurements of one configuration at two moments:
    the log ratio of a configuration's label in a pass to its first, against that of their reference times,
    each pass's drift (median) removed; least squares through the origin, within [0, 1]. A reference that
    tracks the machine only partly (a few milliseconds of it, against a step's own mix of work) gets a
    smaller exponent; without label passes, or without references, nothing is divided (exponent 0).
    """

    exponent: float
    medians: dict[str, float]  # hardware key -> median reference time (ms)
    pairs: int  # (configuration, pass) pairs the exponent was fitted on
    hardware: dict[str, str] = field(default_factory=dict, repr=False)  # config_id -> hardware key

    @classmethod
    def fit(cls, rows: list[tuple[int, dict]], pass_rows: list[tuple[int, dict]]) -> "MachineSpeed | None":
        """None when some measurement lacks a reference time (a collection from before them)."""
        every = [row for _, row in rows + pass_rows]
        if not every or not all(_positive(row.get("reference_ms")) for row in every):
            return None
        first = {row["config_id"]: row for _, row in rows}
        hardware = {config_id: hardware_key(row) for config_id, row in first.items()}  # labels.csv names none
        references: dict[str, list[float]] = {}
        for row in every:
            if row.get("config_id") in hardware:
                references.setdefault(hardware[row["config_id"]], []).append(float(row["reference_ms"]))
        by_pass: dict[str, list[tuple[float, float]]] = {}  # label_pass -> (step log ratio, reference log ratio)
        for _, row in pass_rows:
            earlier = first.get(row["config_id"])
            if earlier is not None and _positive(row.get("step_ms")) and _positive(earlier.get("step_ms")):
                by_pass.setdefault(row.get("label_pass"), []).append(
                    (math.log(float(row["step_ms"]) / float(earlier["step_ms"])),
                     math.log(float(row["reference_ms"]) / float(earlier["reference_ms"]))))
        steps, refs = [], []
        for pairs in by_pass.values():
            if len(pairs) >= MIN_DRIFT_CONFIGS:
                step_ratios, reference_ratios = np.array(pairs).T
                steps.append(step_ratios - np.median(step_ratios))
                refs.append(reference_ratios - np.median(reference_ratios))
        exponent, count = 0.0, 0
        if steps:
            step_ratios, reference_ratios = np.concatenate(steps), np.concatenate(refs)
            count = len(step_ratios)
            spread = float(reference_ratios @ reference_ratios)
            exponent = float(np.clip(step_ratios @ reference_ratios / spread, 0.0, 1.0)) if spread > 0 else 0.0
        return cls(exponent, {key: float(np.median(values)) for key, values in references.items()}, count, hardware)

    def slowdown(self, row: dict) -> float:
        """What a manifest or labels.csv row's times are divided by (1 for a configuration not fitted on)."""
        hardware = self.hardware.get(row.get("config_id"))
        if self.exponent == 0.0 or hardware is None:
            return 1.0
        return (float(row["reference_ms"]) / self.medians[hardware]) ** self.exponent


class ProfileSpeed:
    """How much slower than usual the machine ran as a trace was taken, where the collection timed the reference
    step around its profiled steps (manifest profile_reference_ms): that time over the median reference step of
    the collection's labels on its hardware, so that the trace's times are divided as its label was. A row
    without it keeps ``fallback``'s slowdown (MachineSpeed's)."""

    def __init__(self, reference_ms: dict[str, float], fallback):
        self.reference_ms, self.fallback = reference_ms, fallback

    def __call__(self, row: dict) -> float:
        usual = self.reference_ms.get(hardware_key(row))
        if usual is None or not _positive(row.get("profile_reference_ms")):
            return self.fallback(row)
        return float(row["profile_reference_ms"]) / usual


def _positive(text) -> bool:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) and value > 0


# How samples are built from a trace, beside the feature schema (evaluation caches key on both):
# 2 = per-op labels the median over the trace's repeats of the kept iteration.
SAMPLE_VERSION = 2


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

    def with_config(self, config: Config | None) -> "TraceSample":
        """This sample for ``config``: its times (op durations and gaps, head/tail, profiled), divided by
        its own configuration's slowdown, are divided by that configuration's instead."""
        scale = _slowdown(self.config) / _slowdown(config)
        if scale == 1.0:
            return replace(self, config=config)
        windows = replace(self.windows, y=self.windows.y * scale, y_sum=self.windows.y_sum * scale)
        return replace(self, config=config, windows=windows, head_tail_ns=self.head_tail_ns * scale,
                       profiled_ns=self.profiled_ns * scale)

    @cached_property
    def totals(self) -> tuple[np.ndarray, float]:
        """(iteration context, recorded ops) of its iteration (:func:`rows.iteration_totals`), computed
        once: the rows and the head/tail and reconciliation terms all read them."""
        from itercast.predict.rows import iteration_totals

        return iteration_totals(self.windows)


def measured_op_parts(samples: Sequence[TraceSample]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: the trace's summed op durations and summed gaps, ns: each op's window labels once,
    read without building its feature rows (every training reconciles from these)."""
    from itercast.predict.rows import central_pair_per_op

    sums = np.array([s.windows.y[central_pair_per_op(s.windows)].sum(axis=0) for s in samples]).reshape(-1, 2)
    return sums[:, 0], sums[:, 1]


def _slowdown(config: Config | None) -> float:
    return config.slowdown if config is not None else 1.0


def _iteration_to_keep(timeline) -> int:
    """The median-duration iteration: one representative per trace (others are repeats)."""
    durations = np.array([it.dur_ns for it in timeline.iterations], dtype=float)
    if len(durations) == 0:
        raise ItercastError(f"{timeline.path}: no iteration found")
    return int(np.argsort(durations)[len(durations) // 2])


def _op_times_over_repeats(timeline, windows: Windows, index: int) -> np.ndarray:
    """The window labels of iteration ``index``, each (duration, gap) the median over the trace's iterations
    that ran the same op sequence: one profiled step's op times carry its own hiccups (a preempted thread,
    a page fault), which its repeats do not share."""
    name_ids = timeline.ops["name"]
    kept = timeline.iterations[index]
    repeats = [position for position, other in enumerate(timeline.iterations)
               if np.array_equal(name_ids[other.ops], name_ids[kept.ops])]
    return np.median(np.stack([windows.y[windows.index[:, 0] == position] for position in repeats]), axis=0)


def sample_from_trace(source, config: Config | None = None, width: int = DEFAULT_WIDTH,
                      stride: int = DEFAULT_STRIDE, iteration: int | None = None) -> TraceSample:
    from itercast.timeline import canonical_names

    timeline, windows = timeline_and_windows(source, width, stride)
    index = _iteration_to_keep(timeline) if iteration is None else iteration
    it = timeline.iterations[index]
    keep = windows.index[:, 0] == index
    y = _op_times_over_repeats(timeline, windows, index)
    part = Windows(windows.x[keep], y, y.sum(axis=(1, 2)), windows.index[keep], width, stride, windows.columns)
    names = canonical_names(timeline.op_names()[it.ops])
    sample = TraceSample(None, part, it.ops.stop - it.ops.start, float(it.head_ns + it.tail_ns),
                         float(it.dur_ns), names, timeline.hardware().name)
    return sample.with_config(config)


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
