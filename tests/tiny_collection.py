"""A tiny labelled collection made on the spot: a few torch models profiled on CPU.

Written in the collector's manifest format so that ``Dataset.from_manifest``
reads it like a real collection. Built once per test session (a few seconds).
"""

from __future__ import annotations

import atexit
import csv
import functools
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from itercast.collect.manifest import COLUMNS

MANIFEST_COLUMNS = list(COLUMNS)  # the collector's; those a row leaves out are written empty
BATCH_SIZES = (2, 8)


def _architectures():
    import torch.nn as nn

    return {
        "mlp-small": ("mlp", lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))),
        "mlp-deep": ("mlp", lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64),
                                                  nn.ReLU(), nn.Linear(64, 4))),
        "cnn-small": ("cnn", lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(),
                                                   nn.Linear(4 * 6 * 6, 4))),
        "cnn-pool": ("cnn", lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 4))),
        "norm-mlp": ("normed", lambda: nn.Sequential(nn.Flatten(), nn.LayerNorm(64), nn.Linear(64, 16),
                                                     nn.GELU(), nn.Linear(16, 4))),
        "norm-wide": ("normed", lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.LayerNorm(128),
                                                      nn.Tanh(), nn.Linear(128, 4))),
    }


def _train_step(model, optimiser, batch_size: int):
    import torch

    x, target = torch.randn(batch_size, 1, 8, 8), torch.randint(0, 4, (batch_size,))
    loss = torch.nn.functional.cross_entropy(model(x), target)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()


def _profile(build, batch_size: int, trace: Path) -> tuple[float, float]:
    """Writes a Kineto trace of a few training steps; returns (un-profiled, profiled) ms per step."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = build()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(2):  # the first steps allocate and build state: timed, they made labels the traces'
        _train_step(model, optimiser, batch_size)  # op times could not explain, and tests flaky
    unprofiled_ms = statistics.median(_timed_ms(lambda: _train_step(model, optimiser, batch_size)) for _ in range(5))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(trace))) as profiler:
        start = time.perf_counter()
        for _ in range(3):
            _train_step(model, optimiser, batch_size)
            profiler.step()
    profiled_ms = (time.perf_counter() - start) * 1000 / 3
    return unprofiled_ms, profiled_ms


def _timed_ms(run) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def write_collection(directory: Path) -> Path:
    """Profiles every tiny architecture at each batch size; returns the collection directory."""
    (directory / "traces").mkdir(parents=True, exist_ok=True)
    rows = []
    for model, (family, build) in _architectures().items():
        for batch_size in BATCH_SIZES:
            config_id = f"{model}-b{batch_size}"
            trace = Path("traces") / f"{config_id}.json"
            unprofiled_ms, profiled_ms = _profile(build, batch_size, directory / trace)
            rows.append({"config_id": config_id, "model": model, "family": family, "device": "cpu",
                         "device_name": "test cpu", "cpu_model": "test cpu", "threads": 1,
                         "trace_path": str(trace), "step_ms": unprofiled_ms, "profiled_step_ms": profiled_ms,
                         "batch_size": batch_size, "status": "ok"})
    with open(directory / "manifest.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MANIFEST_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return directory


@functools.lru_cache(maxsize=None)
def tiny_collection() -> Path:
    """The session's tiny collection (made on first use, removed at exit)."""
    directory = Path(tempfile.mkdtemp(prefix="itercast-tiny-collection-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return write_collection(directory)


@functools.lru_cache(maxsize=None)
def tiny_samples():
    from itercast.predict.dataset import Dataset, featurise

    return featurise(Dataset.from_manifest(tiny_collection()).configs)


def slowed_copies(directory: Path) -> Path:
    """The tiny collection three times over in ``directory`` (enough configurations to fit the machine
    speed's exponent), each with a reference time and a label pass. Every third configuration's trace
    pass ran 20% slower than its label pass, as did its reference workload: the fitted exponent is 1
    and those configurations' slowdown 1.2."""
    collection = tiny_collection()
    (directory / "traces").symlink_to(collection / "traces")
    with open(collection / "manifest.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    copies = [row | {"config_id": f"{row['config_id']}-{copy}"} for copy in range(3) for row in rows]
    slowed = {row["config_id"] for row in copies[::3]}
    for row in copies:
        row["reference_ms"] = 3.6 if row["config_id"] in slowed else 3.0
    passes = [{"config_id": row["config_id"], "label_pass": 1, "status": "ok", "reference_ms": 3.0,
               "step_ms": float(row["step_ms"]) / (1.2 if row["config_id"] in slowed else 1.0)}
              for row in copies]
    for name, table in (("manifest.csv", copies), ("labels.csv", passes)):
        with open(directory / name, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    return directory
