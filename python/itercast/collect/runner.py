"""Collection over a grid of configurations: resumable, one manifest row each."""

from __future__ import annotations

import re
import signal
import sys
import threading
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from itercast.collect import zoo
from itercast.collect.hardware import describe
from itercast.collect.manifest import LABEL_COLUMNS, LABEL_PROTOCOLS, LABELS_NAME, MANIFEST_NAME, Manifest, config_id
from itercast.collect.measure import Protocol, trace_name
from itercast.collect.progress import Progress
from itercast.collect.pool import BlockJob, DaskPool, LocalPool, Slot, check_worker_count, plan_slots
from itercast.errors import ItercastError

DTYPES = ("float32", "bfloat16", "float16")
WORKER_LOG_NAME = "worker.log"
TRACE_DIR_NAME = "traces"
DEFAULT_TIME_LIMIT_S = 300.0
# Configurations measured together: the label protocol's rounds visit a block's configurations in turn.
BLOCK_SIZE = 8
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
            protocol=Protocol(), progress_stream=None, label_passes=1, worker_per_model=False,
            workers: int = 0, dask=None) -> list[dict]:
    """Measures every configuration not yet in ``out_dir/manifest.csv``; then, with
    ``label_passes`` N > 1, times the un-profiled steps of each ok one again until it has N label
    passes in ``out_dir/labels.csv`` (the manifest's measurement is the first).

    ``workers``: worker processes measuring side by side, each pinned to cores of its own (0: one per core,
    or with ``device`` "cuda" one per GPU, each seeing its own); at most one per configuration. ``dask``: a
    dask.distributed Client or scheduler address to measure on instead (each Dask worker thread runs a
    worker process; the traces come back to ``out_dir``).

    ``worker_per_model``: each model's configurations run in a worker process of their own (a torch
    import, ~1 s, per model) instead of one worker for the whole grid. A worker reused over hundreds of
    configurations carries its history from model to model (large configurations' profiled steps
    inflated there, not in a fresh worker), but fresh workers run small models' un-profiled steps
    faster, which the predictor's reconciliation does not yet map (docs/decisions.md): off by default
    until it does.

    Stopped by SIGTERM or Ctrl-C, it kills its workers and keeps what whole blocks recorded; run it again
    to go on. Returns the manifest rows of the requested grid, earlier runs' included.
    """
    if label_passes < 1:
        raise ItercastError("label passes must be at least 1")
    if protocol.label_protocol not in LABEL_PROTOCOLS:
        raise ItercastError(f"unknown label protocol {protocol.label_protocol!r}; "
                            f"choose from {', '.join(LABEL_PROTOCOLS)}")
    check_worker_count(workers)
    check_settings(device, threads, dtype)
    configs = grid(resolve_models(models), batch_sizes, input_sizes, dtype, device, threads)
    out_dir = Path(out_dir)
    trace_dir = out_dir / TRACE_DIR_NAME
    trace_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out_dir / MANIFEST_NAME)
    labels = Manifest(out_dir / LABELS_NAME, LABEL_COLUMNS)
    check_one_protocol(protocol.label_protocol, {manifest.path: manifest, labels.path: labels})
    finished = manifest.finished_ids()
    pending = [config for config in configs if config.id not in finished]
    stream = progress_stream or sys.stderr
    with stopped_by_sigterm(), removing_unrecorded_traces(trace_dir, manifest):
        if pending:
            measure_all(pending, manifest, trace_dir, describe(device), time_limit_s, protocol,
                        Progress(len(pending), progress_stream), worker_per_model,
                        pool=make_pool(workers, dask, device, threads, len(pending), out_dir, stream))
        wanted = {config.id for config in configs}
        rows = [row for row in manifest.rows() if row["config_id"] in wanted]
        ok = [config for config in configs if config.id in {row["config_id"] for row in rows if row["status"] == "ok"}]
        traces_finished = [row["finished_at"] for row in rows if row["status"] == "ok"]
        if label_passes > 1 and ok:
            time_label_passes(ok, labels, label_passes, time_limit_s, protocol, progress_stream, worker_per_model,
                              traces_finished, pool=make_pool(workers, dask, device, threads, len(ok), out_dir, None))
    return rows


def make_pool(workers: int, dask, device: str, threads: int, configurations: int, out_dir: Path, stream):
    """The workers a run measures on (pool.plan_slots), or the Dask cluster; a warning about them to ``stream``."""
    if dask is not None:
        return DaskPool(dask_client(dask))
    slots, warning = plan_slots(workers, device, threads, configurations)
    if warning and stream is not None:
        stream.write(warning + "\n")
    return LocalPool(slots, log_path=out_dir / WORKER_LOG_NAME)


def dask_client(address):
    """A dask.distributed Client for a scheduler address (a Client passes through)."""
    try:
        from dask.distributed import Client
    except ImportError as error:
        raise ItercastError(f"--dask needs dask.distributed: {error}") from None
    return address if isinstance(address, Client) else Client(address)


class Stopped(ItercastError):
    """The collection was stopped by a signal; what finished is recorded, and a rerun goes on from there."""

    exit_code = 128 + signal.SIGTERM


@contextmanager
def stopped_by_sigterm():
    """SIGTERM raises :class:`Stopped` in the main thread inside the block, so that the workers are killed and
    the manifest holds whole blocks only (elsewhere, and outside the main thread, the handler is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Stopped("stopped by SIGTERM; the configurations measured so far are recorded: run the same command "
                      "again to go on")

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextmanager
def removing_unrecorded_traces(trace_dir: Path, manifest: Manifest):
    try:
        yield
    finally:
        remove_unrecorded_traces(trace_dir, manifest)


def check_one_protocol(wanted: str, files: dict) -> None:
    """Refuses to add ``wanted``-protocol labels to files (path -> Manifest) that hold another's: labels
    of two protocols are not on one scale (a "paired-rounds" label is a ratio to the reference step)."""
    for path, manifest in files.items():
        others = {name: ids for name, ids in manifest.label_protocols().items() if name != wanted}
        if others:
            name, ids = next(iter(others.items()))
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            raise ItercastError(f"{path} holds labels timed with the {name!r} protocol ({shown}), not "
                                f"{wanted!r}: collect into a new directory, or pass --label-protocol {name}")


def blocks(configs, size: int, split_models: bool = False) -> list[list]:
    """``configs`` in order, in runs of at most ``size`` (the label protocol's rounds visit a block);
    with ``split_models`` no block holds two models (each model gets a fresh worker)."""
    grouped: list[list] = []
    for config in configs:
        model_changed = split_models and grouped and grouped[-1][-1].spec.name != config.spec.name
        if not grouped or len(grouped[-1]) >= size or model_changed:
            grouped.append([])
        grouped[-1].append(config)
    return grouped


def time_label_passes(configs, labels: Manifest, passes, time_limit_s, protocol, progress_stream,
                      worker_per_model=False, traces_finished=(), pool=None):
    """Pass after pass over ``configs``, the un-profiled steps timed again where a pass lacks them, into
    ``labels`` (labels.csv), on ``pool`` (default: one local worker).

    ``traces_finished``: when the manifest's rows were recorded (ISO times), for
    :func:`label_pass_delay_warning`.
    """
    done = {(row["config_id"], row["label_pass"]) for row in labels.rows()}
    todo = {label_pass: [config for config in configs if (config.id, label_pass) not in done]
            for label_pass in range(1, passes)}
    count = sum(map(len, todo.values()))
    if not count:
        return
    progress = Progress(count, progress_stream)
    warning = label_pass_delay_warning(traces_finished, datetime.now(timezone.utc))
    if warning:
        progress.stream.write(warning + "\n")
    pool = pool or LocalPool([Slot()], log_path=labels.path.parent / WORKER_LOG_NAME)
    job = BlockJob(protocol, with_traces=False, time_limit_s=time_limit_s, worker_per_model=worker_per_model)
    for label_pass, pending in todo.items():
        # closing(): however the loop ends, the pool's workers are killed and the blocks in flight dropped
        with closing(pool.map(blocks(pending, BLOCK_SIZE, worker_per_model), job, None)) as finished:
            for done in finished:
                for config, result in zip(done.block, done.results, strict=True):
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


def measure_all(configs, manifest, trace_dir, hardware, time_limit_s, protocol, progress, worker_per_model=False,
                pool=None):
    """Measures ``configs`` on ``pool`` (default: one local worker), a manifest row each as its block finishes."""
    pool = pool or LocalPool([Slot()], log_path=trace_dir.parent / WORKER_LOG_NAME)
    job = BlockJob(protocol, with_traces=True, time_limit_s=time_limit_s, worker_per_model=worker_per_model)
    with closing(pool.map(blocks(configs, BLOCK_SIZE, worker_per_model), job, trace_dir)) as finished:
        for done in finished:
            for config, result in zip(done.block, done.results, strict=True):
                if result["status"] == "ok":
                    result["trace_path"] = f"{trace_dir.name}/{trace_name(config.id)}"
                else:
                    remove_trace_files(trace_dir, config.id)
                manifest.append({**config.row(), **hardware, **result, "elapsed_s": done.elapsed_s,
                                 "finished_at": utc_now()})
                progress.advance(f"{config.id}: {result['status']}")


def remove_unrecorded_traces(trace_dir: Path, manifest: Manifest):
    """What a stopped collection's blocks in flight left behind, half written or whole but without a manifest row
    (those blocks are measured again on resume), so that no trace lacks its row."""
    recorded = {row["trace_path"] for row in manifest.rows() if row["trace_path"]}
    for path in trace_dir.iterdir():
        unfinished = ".partial." in path.name or ".shapes." in path.name
        if unfinished or (path.name.endswith(trace_name("")) and f"{trace_dir.name}/{path.name}" not in recorded):
            path.unlink(missing_ok=True)


def remove_trace_files(trace_dir: Path, config_id: str):
    """Whatever a failed configuration left behind, so no trace lacks its manifest row."""
    for path in trace_dir.glob(f"{config_id}.partial.*"):
        path.unlink()
    (trace_dir / trace_name(config_id)).unlink(missing_ok=True)
