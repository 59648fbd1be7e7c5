"""Measuring one configuration; runs inside the worker process.

Un-profiled steps give the clean label; a short ``torch.profiler`` run with a
schedule writes the Kineto trace, whose ProfilerStep# spans give the profiled label.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Protocol:
    warmup_steps: int = 3
    measured_steps: int = 5  # at least this many un-profiled steps ...
    min_measured_seconds: float = 0.5  # ... and more, up to max_measured_steps, until this long
    max_measured_steps: int = 50
    profile_wait: int = 1
    profile_warmup: int = 1
    profile_active: int = 3
    # Subnormal floats make CPU arithmetic 10-100x slower. On the collection's one fixed batch a
    # small model overfits (vgg11_bn at batch 2 reached a loss of 0.0) and its gradients turn
    # subnormal at some step: steps then jumped from 45 ms to 850 ms at random, and the profiled
    # steps, which come last, measured 15x the un-profiled ones. Flushed to zero, its steps stay
    # at 40 ms. Real data does not hold a loss at zero: the slow steps were the protocol's artefact.
    flush_denormal: bool = True


def trace_name(config_id: str) -> str:
    return f"{config_id}.pt.trace.json.gz"


def measure(config, protocol: Protocol, trace_dir: Path | None) -> dict:
    """Trains ``config`` for a few steps and returns its manifest fields.

    Without ``trace_dir`` only the un-profiled steps are timed (a label pass): no trace, no profiled label.
    """
    import torch

    torch.set_num_threads(config.threads)
    torch.manual_seed(0)
    device = torch.device(config.device)
    workload = config.spec.build(config.batch_size, config.input_size)
    workload.to(device, getattr(torch, config.dtype))
    workload.model.train()
    step = training_step(workload, make_optimizer(config.spec.optimizer, workload.model))
    sync = synchronizer(device)
    trace_path = None if trace_dir is None else Path(trace_dir) / trace_name(config.id)

    with denormals_flushed(protocol.flush_denormal):
        for _ in range(protocol.warmup_steps):
            step()
        sync()
        wall_ns = time_steps(step, sync, protocol)
        if trace_path is not None:
            profile_steps(step, sync, device, protocol, trace_path)
    label = summarise("step_ms", np.array(wall_ns) / 1e6, "steps")
    if trace_path is None:
        return label
    profiled_us = profiler_step_durations(trace_path)
    return {
        "params": sum(parameter.numel() for parameter in workload.model.parameters()),
        "input_shape": ";".join("x".join(map(str, tensor.shape[1:])) for tensor in workload.inputs),
        "threads": torch.get_num_threads(),
        **label,
        **summarise("profiled_step_ms", np.array(profiled_us) / 1e3, "profiled_steps"),
    }


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


def time_steps(step, sync, protocol: Protocol) -> list[int]:
    durations: list[int] = []
    min_total_ns = protocol.min_measured_seconds * 1e9
    while len(durations) < protocol.measured_steps or (
            sum(durations) < min_total_ns and len(durations) < protocol.max_measured_steps):
        start = time.perf_counter_ns()
        step()
        sync()
        durations.append(time.perf_counter_ns() - start)
    return durations


def profile_steps(step, sync, device, protocol: Protocol, trace_path: Path):
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    # Written under another name and renamed, so a trace under the final name is complete.
    partial_path = trace_path.with_name(trace_path.name.replace(".pt.trace.", ".partial."))

    def write_trace(profiler):
        profiler.export_chrome_trace(str(partial_path))
        os.replace(partial_path, trace_path)

    steps = protocol.profile_wait + protocol.profile_warmup + protocol.profile_active
    plan = schedule(wait=protocol.profile_wait, warmup=protocol.profile_warmup,
                    active=protocol.profile_active, repeat=1)
    with profile(activities=activities, record_shapes=True, schedule=plan,
                 on_trace_ready=write_trace) as profiler:
        for _ in range(steps):
            step()
            sync()
            profiler.step()


def profiler_step_durations(trace_path: Path) -> list[float]:
    """Durations (µs) of the host-side ProfilerStep#N spans in a gzipped Kineto trace."""
    with gzip.open(trace_path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    durations = [event["dur"] for event in events
                 if event.get("cat") == "user_annotation" and event.get("ph") == "X"
                 and str(event.get("name", "")).startswith("ProfilerStep#")]
    if not durations:
        raise RuntimeError(f"no ProfilerStep# spans in {trace_path}")
    return durations


def summarise(name: str, values: np.ndarray, count_column: str) -> dict:
    q25, median, q75 = np.percentile(values, [25, 50, 75])
    return {name: float(median), f"{name}_iqr": float(q75 - q25), f"{name}_min": float(values.min()),
            f"{name}_max": float(values.max()), count_column: int(len(values))}
