"""Measuring configurations; runs inside the worker process.

A block of configurations is built, warmed up and traced one after another (a short ``torch.profiler``
run with a schedule writes each Kineto trace, whose ProfilerStep# spans give the profiled label); then
the un-profiled steps that give the clean label are timed as the label protocol says.
"""

from __future__ import annotations

import logging
import math
import os
import traceback
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from itercast.collect import concrete_inputs
from itercast.collect.manifest import LABEL_PROTOCOLS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Protocol:
    warmup_steps: int = 5  # as many as the loop a label is checked against (benchmarks/label_vs_loop.py) ...
    max_warmup_seconds: float = 1.0  # ... or fewer, no fewer than 2, once they have taken this long
    measured_steps: int = 5  # at least this many un-profiled steps ...
    min_measured_seconds: float = 0.5  # ... and more, up to max_measured_steps, until this long
    max_measured_steps: int = 50
    profile_wait: int = 0  # the warm-up steps came just before
    profile_warmup: int = 1
    profile_active: int = 3
    # Subnormal floats make CPU arithmetic 10-100x slower. On the collection's one fixed batch a
    # small model overfits (vgg11_bn at batch 2 reached a loss of 0.0) and its gradients turn
    # subnormal at some step: its steps then slowed at random, and its profiled steps, which come
    # last, most (docs/decisions.md). Real data does not hold a loss at zero: the slow steps were
    # the protocol's artefact.
    flush_denormal: bool = True
    # The reference workload (ReferenceWorkload) is timed this many times before the warm-up steps and
    # as many after the un-profiled steps; 0 leaves the reference_* fields out.
    reference_repeats: int = 5
    # Profile the timed steps without concrete inputs, which keep every tensor alive until the profile
    # ends, and take the ops' concrete inputs from one more profiled step (collect/concrete_inputs.py).
    separate_concrete_inputs: bool = True
    # How the label is timed (manifest.LABEL_PROTOCOLS). "fresh-loop": each configuration in a process of its
    # own, forked from a worker that has only imported torch, as a user's training loop runs; its label timed
    # first, right after the warm-up, as segments of consecutive steps between runs of the reference (the ratio
    # of the two is the label, as in paired-rounds): a process that ran other models first runs an MLP's step
    # up to 2x faster than a fresh one (glibc's malloc has raised its mmap threshold there), so the label of a
    # long-lived worker is not the loop's (docs/decisions.md). "paired-rounds": after a block's traces,
    # ``label_rounds`` rounds visit its configurations in a shuffled order, each visit timing a reference
    # step and a configuration step alternately; the label is the median ratio of the pairs, which both
    # see the same interference (benchmarks/label_protocols.py chose it: docs/decisions.md).
    # "wall": consecutive steps after the warm-up, their median wall time.
    label_protocol: str = "fresh-loop"
    label_rounds: int = 5
    # Pairs per configuration: as many as fill min_measured_seconds, within these bounds.
    min_label_pairs: int = 5
    max_label_pairs: int = 40
    label_seed: int = 0  # the rounds' visiting order


def trace_name(config_id: str) -> str:
    return f"{config_id}.pt.trace.json.gz"


def measure(config, protocol: Protocol, trace_dir: Path | None) -> dict:
    """Trains ``config`` for a few steps and returns its manifest fields; raises what training raises.

    Without ``trace_dir`` only the label is timed (a label pass): no trace, no profiled label.
    """
    with denormals_flushed(protocol.flush_denormal):
        prepared = prepare(config, protocol, trace_dir)
        (label,) = time_labels([prepared], protocol, raise_errors=True).values()
    return {**prepared.fields, **label}


def measure_block(configs, protocol: Protocol, trace_dir: Path | None) -> list[dict]:
    """Each of ``configs`` measured as :func:`measure` does, its label timed in rounds over the block:
    a dict with status ok and its fields, or its failure; one failing configuration spares the others."""
    results: dict[str, dict] = {}
    prepared = []
    with denormals_flushed(protocol.flush_denormal):
        for config in configs:
            try:
                prepared.append(prepare(config, protocol, trace_dir))
            except Exception as error:  # noqa: BLE001 - every failure becomes a manifest row
                results[config.id] = failure(error)
        labels = time_labels(prepared, protocol, raise_errors=False)
    for item in prepared:
        label = labels[item.config.id]
        results[item.config.id] = label if "status" in label else {"status": "ok", **item.fields, **label}
    return [results[config.id] for config in configs]


@dataclass
class Prepared:
    """A built, warmed-up configuration (traced, where asked) whose label is still to be timed."""

    config: object
    step: Callable[[], None]  # one training step, synchronised
    fields: dict  # its manifest fields but the label's
    step_estimate_ns: float  # one warm step's wall time
    wall_ns: list[int]  # the "wall" protocol's steps, timed right after the warm-up
    early_label: dict | None = None  # the "fresh-loop" protocol's label fields, timed right after the warm-up


def prepare(config, protocol: Protocol, trace_dir: Path | None) -> Prepared:
    import torch

    torch.set_num_threads(config.threads)
    torch.manual_seed(0)
    device = torch.device(config.device)
    # Before the model: its tensors, alive throughout, then lie below the step's in the heap, as a training
    # script's own objects do, rather than pinning the heap's top (which changes how a step allocates).
    # In float32 whatever the configuration's dtype: a ratio label is scaled by the collection's median reference.
    reference = ReferenceWorkload(device, torch.float32)
    workload = config.spec.build(config.batch_size, config.input_size)
    workload.to(device, getattr(torch, config.dtype))
    workload.model.train()
    step = synchronised(training_step(workload, make_optimizer(config.spec.optimizer, workload.model)), device)
    trace_path = None if trace_dir is None else Path(trace_dir) / trace_name(config.id)
    run_reference = synchronised(reference.run, device)

    wall = protocol.label_protocol == "wall"
    # Around the wall label's steps; otherwise only where it describes the trace: right before it.
    reference_before = reference.time(protocol.reference_repeats) if wall else []
    warm_up = warm_up_steps(step, protocol)
    estimate = float(min(warm_up[-2:])) if warm_up else float(timed_ns(step))
    wall_ns = time_steps(step, protocol) if wall else []
    fresh_loop = protocol.label_protocol == "fresh-loop"
    early_label = loop_label(step, estimate, run_reference, protocol) if fresh_loop else None
    reference_after = reference.time(protocol.reference_repeats)
    fields = reference_fields(reference_before + reference_after)
    if trace_path is not None:
        profiled, profiled_us = bracketed_profile(step, estimate, run_reference, device, protocol, trace_path)
        fields = {"params": sum(parameter.numel() for parameter in workload.model.parameters()),
                  "input_shape": ";".join("x".join(map(str, tensor.shape[1:])) for tensor in workload.inputs),
                  "threads": torch.get_num_threads(), **fields, **profiled,
                  **summarise("profiled_step_ms", np.array(profiled_us) / 1e3, "profiled_steps")}
    return Prepared(config, step, fields, estimate, wall_ns, early_label)


def warm_up_steps(step, protocol: Protocol) -> list[int]:
    """The untimed steps before anything is measured, each one's ns: ``protocol.warmup_steps`` of them, or fewer
    (at least 2) once they have taken ``protocol.max_warmup_seconds``: a step of a second is warm after two."""
    durations: list[int] = []
    while len(durations) < protocol.warmup_steps and (
            len(durations) < 2 or sum(durations) < protocol.max_warmup_seconds * 1e9):
        durations.append(timed_ns(step))
    return durations


def time_labels(prepared: list[Prepared], protocol: Protocol, raise_errors: bool) -> dict[str, dict]:
    """Config id -> its label fields (manifest.LABEL_PROTOCOL_COLUMNS and step_ms's), or its failure."""
    if protocol.label_protocol not in LABEL_PROTOCOLS:
        raise ValueError(f"unknown label protocol {protocol.label_protocol!r}; choose from {', '.join(LABEL_PROTOCOLS)}")
    if protocol.label_protocol == "wall":
        return {item.config.id: {**summarise("step_ms", np.array(item.wall_ns) / 1e6, "steps"),
                                 "label_protocol": "wall"} for item in prepared}
    if protocol.label_protocol == "fresh-loop":
        return {item.config.id: item.early_label for item in prepared}
    return paired_rounds(prepared, protocol, raise_errors)


# A "fresh-loop" label times min_measured_seconds of consecutive steps, at least min_label_pairs of them and at
# most LOOP_STEPS (the loop benchmarks/label_vs_loop.py checks it against), in label_rounds segments.
LOOP_STEPS = 40


def loop_plan(step_ns: float, protocol: Protocol) -> tuple[int, int]:
    """(segments, steps per segment) of a "fresh-loop" label for a step of ``step_ns``."""
    wanted = math.ceil(protocol.min_measured_seconds * 1e9 / max(step_ns, 1.0))
    steps = min(max(wanted, protocol.min_label_pairs), LOOP_STEPS)
    segments = max(1, min(protocol.label_rounds, steps))
    return segments, math.ceil(steps / segments)


def loop_label(step, step_ns: float, run_reference, protocol: Protocol) -> dict:
    """The "fresh-loop" label fields of a warmed-up ``step``: a training loop's consecutive steps, cut into segments
    between reference measurements; a segment's ratio is its median step over the mean of the references on
    either side (they saw the interference it saw), the label their median (paired_label, a segment a round).
    Nothing runs between the steps of a segment, so that they run as a loop's do (the reference allocates
    nothing, and comes only between segments)."""
    segments, steps = loop_plan(step_ns, protocol)
    runs = reference_runs(steps * step_ns, typical_ns(run_reference))
    pairs = bracketed_visit(step, run_reference, pairs=segments, runs=runs, steps=steps, summary=np.median)
    return {**paired_label([[pair] for pair in pairs]), "label_protocol": "fresh-loop"}


def typical_ns(run) -> float:
    """One run's time, the median of three: what sizes the reference measurements beside a step."""
    return float(np.median([timed_ns(run) for _ in range(3)]))


def bracketed_profile(step, step_ns: float, run_reference, device, protocol: Protocol, trace_path: Path
                      ) -> tuple[dict, list[float]]:
    """Profiles ``step`` (about ``step_ns``) into ``trace_path`` between two reference measurements, each about a
    quarter of the profile's time: ({"profile_reference_ms": their mean per reference run}, the profiled steps'
    durations in µs). A trace taken beside a busy neighbour carries the slowdown it saw; the dataset divides the
    trace's times by it (predict.dataset)."""
    active = protocol.profile_wait + protocol.profile_warmup + protocol.profile_active
    runs = reference_runs(active * step_ns, typical_ns(run_reference))
    before = [timed_ns(run_reference) for _ in range(runs)]
    durations_us = profile_steps(step, device, protocol, trace_path)
    after = [timed_ns(run_reference) for _ in range(runs)]
    return {"profile_reference_ms": float(np.mean(before + after)) / 1e6}, durations_us


def paired_rounds(prepared: list[Prepared], protocol: Protocol, raise_errors: bool) -> dict[str, dict]:
    """The "paired-rounds" labels of a block (Protocol.label_protocol)."""
    import torch

    references = {}
    for item in prepared:
        if item.config.device not in references:
            device = torch.device(item.config.device)
            reference = ReferenceWorkload(device, torch.float32)
            references[item.config.device] = synchronised(reference.run, device)
            reference.run()
    reference_ns = {device: typical_ns(run) for device, run in references.items()}
    plans = {item.config.id: visit_plan(item.step_estimate_ns, reference_ns[item.config.device], protocol)
             for item in prepared}
    pairs: dict[str, list[list[tuple[float, float]]]] = {item.config.id: [] for item in prepared}
    failed: dict[str, dict] = {}
    rng = np.random.default_rng(protocol.label_seed)
    for _ in range(protocol.label_rounds):
        for index in rng.permutation(len(prepared)):
            item = prepared[index]
            if item.config.id in failed:
                continue
            torch.set_num_threads(item.config.threads)
            try:
                pairs[item.config.id].append(bracketed_visit(item.step, references[item.config.device],
                                                             **plans[item.config.id]))
            except Exception as error:  # noqa: BLE001 - a failure is this configuration's row
                if raise_errors:
                    raise
                failed[item.config.id] = failure(error)
    return {config_id: failed.get(config_id) or paired_label(rounds) for config_id, rounds in pairs.items()}


# A reference timed beside a long step runs this share of the step's time (up to MAX_REFERENCE_RUNS runs):
# one run of a few milliseconds samples an instant of the interference a step of a second averages over.
REFERENCE_SHARE_OF_STEP = 0.25
MAX_REFERENCE_RUNS = 8


# A step shorter than the reference, run right after it, finds the reference's data in the caches, not its
# own: one such step of fasttext (1-2 ms) took 1.75x its time among consecutive steps. Such a step is timed
# as a run of consecutive steps about as long as the reference (at most MAX_STEPS_PER_PAIR), after one untimed.
MAX_STEPS_PER_PAIR = 16


def reference_runs(step_ns: float, reference_ns: float) -> int:
    """Runs of the reference step that make up one reference measurement beside a step of ``step_ns``."""
    return int(min(max(round(REFERENCE_SHARE_OF_STEP * step_ns / max(reference_ns, 1.0)), 1), MAX_REFERENCE_RUNS))


def steps_per_pair(step_ns: float, reference_ns: float) -> int:
    """Consecutive steps timed together between two reference measurements (1: a step as long as the reference)."""
    return int(min(max(math.ceil(reference_ns / max(step_ns, 1.0)), 1), MAX_STEPS_PER_PAIR))


def visit_plan(step_ns: float, reference_ns: float, protocol: Protocol) -> dict:
    """How a visit times a configuration whose step takes ``step_ns``: bracketed_visit's arguments."""
    runs = reference_runs(step_ns, reference_ns)
    steps = steps_per_pair(step_ns, reference_ns)
    untimed = 1 if steps > 1 else 0
    pair_ns = (steps + untimed) * step_ns + runs * reference_ns
    return {"pairs": pairs_per_visit(pair_ns, protocol), "runs": runs, "steps": steps, "untimed": untimed}


def bracketed_visit(step, run_reference, pairs: int, runs: int, steps: int = 1, untimed: int = 0,
                    summary=np.mean) -> list[tuple[float, float]]:
    """``pairs`` times: ``untimed`` steps, then ``steps`` consecutive steps timed, between two reference
    measurements (``runs`` runs each). Per pair: (the mean of the two references per run, ns; the timed steps'
    ``summary`` per step, ns: their mean, or for a loop's segment their median). The references before and after the steps bracket the interference they saw."""

    def reference() -> float:
        return sum(timed_ns(run_reference) for _ in range(runs)) / runs

    before = reference()
    timed = []
    for _ in range(pairs):
        for _ in range(untimed):
            step()
        step_ns = float(summary([timed_ns(step) for _ in range(steps)]))
        after = reference()
        timed.append(((before + after) / 2, step_ns))
        before = after
    return timed


def pairs_per_visit(pair_ns: float, protocol: Protocol) -> int:
    """Pairs each round times: together as many as fill min_measured_seconds, within the protocol's bounds."""
    wanted = math.ceil(protocol.min_measured_seconds * 1e9 / max(pair_ns, 1.0))
    total = min(max(wanted, protocol.min_label_pairs), protocol.max_label_pairs)
    return max(1, math.ceil(total / max(protocol.label_rounds, 1)))


def paired_label(rounds: list[list[tuple[float, float]]]) -> dict:
    """A configuration's label fields from its rounds of (reference ns, step ns) pairs."""
    every = np.array([pair for visit in rounds for pair in visit], dtype=float)
    ratios = every[:, 1] / every[:, 0]
    round_medians = np.array([np.median([step / reference for reference, step in visit]) for visit in rounds])
    q25, q75 = np.percentile(round_medians, [25, 75])
    ratio = float(np.median(ratios))
    return {**summarise("step_ms", every[:, 1] / 1e6, "steps"), "label_protocol": "paired-rounds",
            "label_ratio": ratio, "label_reference_ms": float(np.median(every[:, 0])) / 1e6,
            "label_spread": float((q75 - q25) / ratio), "label_rounds": len(rounds)}


def timed_ns(run) -> int:
    start = time.perf_counter_ns()
    run()
    return time.perf_counter_ns() - start


def synchronised(run, device):
    """``run`` followed by waiting for ``device``'s queued work, so that timing it times that work."""
    sync = synchronizer(device)

    def call():
        run()
        sync()

    return call


class ReferenceWorkload:
    """A fixed workload timed next to every configuration: the machine's speed at that moment.

    A shared machine's speed wanders within a collection (two label passes of the zoo disagreed less
    once each was divided by the drift of other models timed minutes around it), and that wandering
    is in the labels but in no trace. Three parts,
    each a few hundred microseconds to a millisecond, as training steps are made of them: arithmetic
    (element-wise exp and tanh of a 256x256 matrix), memory traffic (a 4 MiB add) and per-op overhead
    (a hundred tiny ops and a small autograd graph). The dataset divides each measurement by the slowdown its
    reference time tells (predict.dataset.MachineSpeed), which brings a configuration's two measurements closer
    (docs/decisions.md).
    """

    PARTS = ("compute", "memory", "overhead")

    def __init__(self, device, dtype):
        import torch

        generator = torch.Generator().manual_seed(0)

        def tensor(*shape, requires_grad=False):
            return torch.randn(*shape, generator=generator).to(device, dtype).requires_grad_(requires_grad)

        self.sync = synchronizer(device)
        self.matrices = tensor(256, 256), tensor(256, 256)
        self.product = tensor(256, 256)
        self.streams = tensor(1 << 20), tensor(1 << 20)
        self.small = tensor(64)
        self.layer, self.batch = tensor(64, 64, requires_grad=True), tensor(8, 64)

    def compute(self):
        import torch

        # Element-wise into a kept tensor, not a matmul: a BLAS call allocates its own buffers, and a reference run
        # between a loop's steps that allocated would change how the steps allocate (an NCF step ran 2.7x faster
        # with a matmul run between steps than alone: glibc's malloc then kept the heap it otherwise gave back).
        for _ in range(4):
            torch.exp(self.matrices[0], out=self.product)
            torch.tanh(self.matrices[1], out=self.product)

    def memory(self):
        import torch

        for _ in range(4):
            torch.add(self.streams[0], self.streams[1], out=self.streams[0])
        self.streams[0].mul_(0.5)  # keeps the values bounded however often it runs

    def overhead(self):
        value = self.small
        for _ in range(100):
            value = value + 1.0
        for _ in range(10):
            (self.batch @ self.layer).relu().sum().backward()
        self.layer.grad = None

    def run(self):
        """Every part once: the reference step a "paired-rounds" label pairs each training step with."""
        for part in self.PARTS:
            getattr(self, part)()

    def time(self, repeats: int) -> list[dict[str, float]]:
        """``repeats`` timings, each {part: ms}, after one untimed run of every part."""
        if repeats <= 0:
            return []
        self._run_each()
        return [self._run_each() for _ in range(repeats)]

    def _run_each(self) -> dict[str, float]:
        times = {}
        for part in self.PARTS:
            start = time.perf_counter_ns()
            getattr(self, part)()
            self.sync()
            times[part] = (time.perf_counter_ns() - start) / 1e6
        return times


def reference_fields(timings: list[dict[str, float]]) -> dict:
    """The manifest's reference_* fields: each part's median and their sum; none without timings."""
    if not timings:
        return {}
    parts = {f"reference_{part}_ms": float(np.median([timing[part] for timing in timings]))
             for part in ReferenceWorkload.PARTS}
    return {"reference_ms": sum(parts.values()), **parts}


def failure(error: BaseException) -> dict:
    """The manifest fields of a configuration that raised ``error``: status oom or error, and a message."""
    status = "oom" if is_out_of_memory(error) else "error"
    last_frame = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" (at {last_frame[0].filename}:{last_frame[0].lineno})" if last_frame else ""
    message = f"{type(error).__name__}: {error}".strip()
    return {"status": status, "message": message[:1000] + where}


def is_out_of_memory(error: BaseException) -> bool:
    if type(error).__name__ == "OutOfMemoryError" or isinstance(error, MemoryError):
        return True
    text = str(error)
    return "out of memory" in text or "can't allocate memory" in text


def flushes_denormals() -> bool:
    """Whether this thread's CPU arithmetic flushes subnormal floats to zero now."""
    import torch

    smallest_normal = torch.finfo(torch.float32).tiny
    return (torch.tensor([smallest_normal]) * 0.5).item() == 0.0


@contextmanager
def denormals_flushed(enabled: bool):
    """CPU subnormals flushed to zero (or not) inside the block, as before it afterwards."""
    import torch

    before = flushes_denormals()
    torch.set_flush_denormal(enabled)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)


def make_optimizer(name: str, model):
    import torch

    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def training_step(workload, optimizer):
    def step():
        optimizer.zero_grad(set_to_none=True)
        workload.loss(workload.model(*workload.inputs), workload.target).backward()
        optimizer.step()

    return step


def synchronizer(device):
    import torch

    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def time_steps(step, protocol: Protocol) -> list[int]:
    durations: list[int] = []
    min_total_ns = protocol.min_measured_seconds * 1e9
    while len(durations) < protocol.measured_steps or (
            sum(durations) < min_total_ns and len(durations) < protocol.max_measured_steps):
        durations.append(timed_ns(step))
    return durations


def profile_steps(step, device, protocol: Protocol, trace_path: Path) -> list[float]:
    """Writes the trace of ``protocol``'s profiled steps to ``trace_path``, complete or not at all; returns their
    ProfilerStep durations (µs), read from the trace."""
    # Written under another name and renamed, so a trace under the final name is complete.
    partial_path = trace_path.with_name(trace_path.name.replace(".pt.trace.", ".partial."))
    separate = protocol.separate_concrete_inputs and concrete_inputs.can_switch_off()
    if separate:
        concrete_inputs.record_concrete_inputs(False)
    try:
        _profile(step, device, partial_path, protocol.profile_wait, protocol.profile_warmup,
                 protocol.profile_active)
    finally:
        if separate:
            concrete_inputs.record_concrete_inputs(True)
    if separate:
        shapes_path = trace_path.with_name(trace_path.name.replace(".pt.trace.", ".shapes."))
        _profile(step, device, shapes_path, wait=0, warmup=1, active=1)
        (given, ops), trace = concrete_inputs.merge_traces(partial_path, shapes_path)
        shapes_path.unlink()
        if given < ops:
            log.warning("%s: concrete inputs found for %d of %d ops", trace_path.name, given, ops)
    else:
        trace = concrete_inputs.load_trace_json(partial_path)
    durations = profiler_step_durations(trace, trace_path)
    os.replace(partial_path, trace_path)
    return durations


def _profile(step, device, path: Path, wait: int, warmup: int, active: int) -> None:
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    plan = schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    with profile(activities=activities, record_shapes=True, schedule=plan,
                 on_trace_ready=lambda profiler: profiler.export_chrome_trace(str(path))) as profiler:
        for _ in range(wait + warmup + active):
            step()
            profiler.step()


def profiler_step_durations(trace: dict, trace_path: Path) -> list[float]:
    """Durations (µs) of the host-side ProfilerStep#N spans in a Kineto trace (parsed) written to ``trace_path``."""
    events = trace["traceEvents"]
    durations = [event["dur"] for event in events if concrete_inputs.is_profiler_step(event)]
    if not durations:
        raise RuntimeError(f"no ProfilerStep# spans in {trace_path}")
    return durations


def summarise(name: str, values: np.ndarray, count_column: str) -> dict:
    q25, median, q75 = np.percentile(values, [25, 50, 75])
    return {name: float(median), f"{name}_iqr": float(q75 - q25), f"{name}_min": float(values.min()),
            f"{name}_max": float(values.max()), count_column: int(len(values))}
