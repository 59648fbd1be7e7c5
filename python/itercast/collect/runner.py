"""Collection over a grid of configurations: resumable, one manifest row each."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from itercast.collect import zoo
from itercast.collect.hardware import describe
from itercast.collect.manifest import LABEL_COLUMNS, LABELS_NAME, MANIFEST_NAME, Manifest, config_id
from itercast.collect.measure import Protocol, trace_name
from itercast.collect.progress import Progress
from itercast.collect.worker import Worker
from itercast.errors import ItercastError

DTYPES = ("float32", "bfloat16", "float16")
WORKER_LOG_NAME = "worker.log"
TRACE_DIR_NAME = "traces"
DEFAULT_TIME_LIMIT_S = 300.0
# Label passes begun this long after the traces were recorded get a warning (label_pass_delay_warning).
LATE_LABEL_PASS_S = 3600.0


@dataclass(frozen=True)
class Config:
    spec: zoo.ModelSpec
    batch_size: int
    input_size: int
    dtype: str
    device: str
    threads: int

    @property
    def id(self) -> str:
        return config_id(self.spec.name, self.batch_size, self.input_size, self.dtype, self.device, self.threads)

    def row(self) -> dict:
        return {"config_id": self.id, "model": self.spec.name, "family": self.spec.family,
                "arch": self.spec.arch, "batch_size": self.batch_size,
                "input_size": self.input_size, "input_unit": self.spec.input_unit,
                "dtype": self.dtype, "optimizer": self.spec.optimizer, "device": self.device,
                "threads": self.threads}


def suites() -> dict[str, dict[str, zoo.ModelSpec]]:
    """The collectable model sets by name: the zoo, and the blind set that the zoo's models never see."""
    from itercast.collect import blind

    return {"zoo": zoo.MODELS, "blind": blind.MODELS}


def resolve_models(names=None) -> list[zoo.ModelSpec]:
    """Specs for zoo or blind-set names (the whole zoo by default); ModelSpec objects pass through."""
    if names is None:
        return list(zoo.MODELS.values())
    known = {name: spec for models in suites().values() for name, spec in models.items()}
    unknown = [name for name in names if isinstance(name, str) and name not in known]
    if unknown:
        raise ItercastError(f"unknown model(s): {', '.join(unknown)}; "
                            "`itercast collect --list [--suite blind]` shows the models")
    return [known[name] if isinstance(name, str) else name for name in names]


def grid(specs, batch_sizes, input_sizes, dtype, device, threads) -> list[Config]:
    return [Config(spec, batch, size, dtype, device, threads)
            for spec in specs
            for size in (input_sizes or spec.input_sizes)
            for batch in batch_sizes]


def check_settings(device: str, threads: int, dtype: str):
    if dtype not in DTYPES:
        raise ItercastError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    if threads < 1:
        raise ItercastError("threads must be at least 1")
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ItercastError(f"unknown device {device!r}; use cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ItercastError("device cuda requested but torch sees no CUDA device")


def collect(out_dir, models=None, batch_sizes=zoo.DEFAULT_BATCH_SIZES, input_sizes=None,
            device="cpu", threads=1, dtype="float32", time_limit_s=DEFAULT_TIME_LIMIT_S,
            protocol=Protocol(), progress_stream=None, label_passes=1, worker_per_model=False) -> list[dict]:
    """Measures every configuration not yet in ``out_dir/manifest.csv``; then, with
    ``label_passes`` N > 1, times the un-profiled steps of each ok one again until it has N label
    passes in ``out_dir/labels.csv`` (the manifest's measurement is the first).

    ``worker_per_model``: each model's configurations run in a worker process of their own (a torch
    import, ~1 s, per model) instead of one worker for the whole grid. A worker reused over hundreds of
    configurations carries its history from model to model (large configurations' profiled steps
    inflated there, not in a fresh worker), but fresh workers run small models' un-profiled steps
    faster, which the predictor's reconciliation does not yet map (docs/decisions.md): off by default
    until it does.

    Returns the manifest rows of the requested grid, earlier runs' included.
    """
    if label_passes < 1:
        raise ItercastError("label passes must be at least 1")
    check_settings(device, threads, dtype)
    configs = grid(resolve_models(models), batch_sizes, input_sizes, dtype, device, threads)
    out_dir = Path(out_dir)
    trace_dir = out_dir / TRACE_DIR_NAME
    trace_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out_dir / MANIFEST_NAME)
    finished = manifest.finished_ids()
    pending = [config for config in configs if config.id not in finished]
    if pending:
        measure_all(pending, manifest, trace_dir, describe(device), time_limit_s, protocol,
                    Progress(len(pending), progress_stream), worker_per_model)
    wanted = {config.id for config in configs}
    rows = [row for row in manifest.rows() if row["config_id"] in wanted]
    ok = {row["config_id"] for row in rows if row["status"] == "ok"}
    traces_finished = [row["finished_at"] for row in rows if row["status"] == "ok"]
    time_label_passes([config for config in configs if config.id in ok], out_dir / LABELS_NAME,
                      label_passes, time_limit_s, protocol, progress_stream, worker_per_model, traces_finished)
    return rows


def fresh_worker_per_model(worker: Worker, items, enabled: bool = True, config_of=lambda item: item):
    """Yields ``items`` in order; where the model of one's configuration (``config_of``) is not the
    previous one's, stops ``worker`` first (its next run starts a new process)."""
    previous = None
    for item in items:
        model = config_of(item).spec.name
        if enabled and previous is not None and model != previous:
            worker.stop()
        previous = model
        yield item


def time_label_passes(configs, labels_path, passes, time_limit_s, protocol, progress_stream,
                      worker_per_model=False, traces_finished=()):
    """Pass after pass over ``configs``, the un-profiled steps timed again where a pass lacks them.

    ``traces_finished``: when the manifest's rows were recorded (ISO times), for
    :func:`label_pass_delay_warning`.
    """
    labels = Manifest(labels_path, LABEL_COLUMNS)
    done = {(row["config_id"], row["label_pass"]) for row in labels.rows()}
    todo = [(label_pass, config) for label_pass in range(1, passes)
            for config in configs if (config.id, label_pass) not in done]
    if not todo:
        return
    progress = Progress(len(todo), progress_stream)
    warning = label_pass_delay_warning(traces_finished, datetime.now(timezone.utc))
    if warning:
        progress.stream.write(warning + "\n")
    with Worker(log_path=labels_path.parent / WORKER_LOG_NAME) as worker:
        for label_pass, config in fresh_worker_per_model(worker, todo, worker_per_model, lambda item: item[1]):
            result = worker.run(config, protocol, None, time_limit_s)
            labels.append({"config_id": config.id, "label_pass": label_pass, **result,
                           "finished_at": utc_now()})
            progress.advance(f"{config.id} (label pass {label_pass}): {result['status']}")


def label_pass_delay_warning(traces_finished, now: datetime) -> str | None:
    """A warning when label passes begin more than LATE_LABEL_PASS_S after the last trace was recorded.

    Drift that scales every step alike is divided out of each pass (predict.dataset.label_passes), but a
    machine also drifts unevenly: passes five hours after the traces moved short and long steps
    differently, and the predictor's oracle, which knows every traced op's time, got markedly worse
    against them (docs/decisions.md).
    """
    times = [datetime.fromisoformat(value) for value in traces_finished if value]
    if not times:
        return None
    last = max(moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc) for moment in times)
    seconds = (now - last).total_seconds()
    if seconds <= LATE_LABEL_PASS_S:
        return None
    return (f"warning: label passes begin {seconds / 3600:.1f} h after the last trace was recorded; a machine that "
            f"drifts unevenly gives labels that no longer match the traces (docs/collect.md, \"Label "
            f"passes\"): time them right after the traces")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def measure_all(configs, manifest, trace_dir, hardware, time_limit_s, protocol, progress, worker_per_model=False):
    with Worker(log_path=trace_dir.parent / WORKER_LOG_NAME) as worker:
        for config in fresh_worker_per_model(worker, configs, worker_per_model):
            started = time.monotonic()
            result = worker.run(config, protocol, trace_dir, time_limit_s)
            if result["status"] == "ok":
                result["trace_path"] = f"{trace_dir.name}/{trace_name(config.id)}"
            else:
                remove_trace_files(trace_dir, config.id)
            row = {**config.row(), **hardware, **result,
                   "elapsed_s": round(time.monotonic() - started, 3),
                   "finished_at": utc_now()}
            manifest.append(row)
            progress.advance(f"{config.id}: {result['status']}")


def remove_trace_files(trace_dir: Path, config_id: str):
    """Whatever a failed configuration left behind, so no trace lacks its manifest row."""
    for path in trace_dir.glob(f"{config_id}.partial.*"):
        path.unlink()
    (trace_dir / trace_name(config_id)).unlink(missing_ok=True)
