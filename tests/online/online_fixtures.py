"""Helpers for the online tests and benchmark: tiny torch jobs, their traces, a model trained on them.

CI has no collected dataset, so the tests profile a few tiny CPU models
themselves, write a manifest in the collector's format and fit a small
Predictor on it (a few seconds in all).
"""

from __future__ import annotations

import csv
import statistics
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from tiny_collection import MANIFEST_COLUMNS

from itercast.predict import Dataset, Predictor
from itercast.trace import read_trace

# Two target "machines": the traces are the same, the labels of the second are halved,
# so a model holds two hardware keys with different predictions.
CPU_MODELS = {"test-cpu-a": 1.0, "test-cpu-b": 0.5}


def mlp(width: int, depth: int = 2) -> torch.nn.Module:
    layers: list[torch.nn.Module] = [torch.nn.Linear(32, width), torch.nn.ReLU()]
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


class TrainingJob:
    """A tiny classifier trained with SGD on one fixed random batch."""

    def __init__(self, width: int = 64, depth: int = 2, batch: int = 16, seed: int = 0):
        torch.manual_seed(seed)
        self.model = mlp(width, depth)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x, self.y = torch.randn(batch, 32), torch.randint(0, 10, (batch,))
        self.batch = batch

    def step(self) -> None:
        self.optimizer.zero_grad()
        torch.nn.functional.cross_entropy(self.model(self.x), self.y).backward()
        self.optimizer.step()

    def median_step_ms(self, steps: int = 5) -> float:
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            self.step()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    def profile_to(self, path: Path, active: int = 2) -> float:
        """Writes a trace of ``active`` profiled steps to ``path``; returns their median ProfilerStep ms."""
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=active),
                     on_trace_ready=lambda prof: prof.export_chrome_trace(str(path)),
                     record_shapes=True) as prof:
            for _ in range(1 + active):
                self.step()
                prof.step()
        return statistics.median(step.dur_ns / 1e6 for step in read_trace(path).profiler_steps())


JOBS = [dict(width=w, depth=d, batch=b) for w, d, b in
        [(32, 1, 8), (64, 2, 16), (128, 2, 16), (64, 3, 32), (256, 1, 8), (128, 3, 32)]]


def write_dataset(directory: Path) -> Path:
    """Profiles each job in JOBS and writes ``directory/manifest.csv`` (two CPU targets); returns it."""
    (directory / "traces").mkdir(parents=True, exist_ok=True)
    rows = []
    for index, spec in enumerate(JOBS):
        job = TrainingJob(**spec, seed=index)
        job.median_step_ms(2)  # warm up
        step_ms = job.median_step_ms()
        relative = f"traces/job{index}.pt.trace.json"
        profiled_ms = job.profile_to(directory / relative)
        for cpu_model, scale in CPU_MODELS.items():
            rows.append({"config_id": f"job{index}-{cpu_model}", "model": f"mlp{spec['width']}x{spec['depth']}",
                         "family": "mlp", "device": "cpu", "device_name": cpu_model, "cpu_model": cpu_model,
                         "threads": 1, "trace_path": relative, "step_ms": step_ms * scale,
                         "profiled_step_ms": profiled_ms, "batch_size": spec["batch"], "status": "ok"})
    manifest = directory / "manifest.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.DictWriter(handle, MANIFEST_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return manifest


def train_model(directory: Path, rounds: int = 20) -> Path:
    """A two-target model (``directory/model.itc``) fitted on freshly profiled tiny jobs."""
    manifest = write_dataset(directory)
    path = directory / "model.itc"
    Predictor(rounds=rounds, params={"min_data_in_leaf": 2}).fit(Dataset.from_manifest(manifest)).save(path)
    return path
