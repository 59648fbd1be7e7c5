"""Workers that measure blocks of configurations side by side: one per core (or GPU), or on a Dask cluster.

Blocks are dealt as workers free up, the last ones split into single configurations, so that the workers
finish together. Results come back to the caller's thread, which alone writes the manifest: a collection
stopped at any moment has recorded whole blocks only, and resumes with the rest.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from itercast.collect.measure import Protocol, trace_name
from itercast.collect.worker import Worker, WorkerClosed
from itercast.errors import ItercastError


@dataclass(frozen=True)
class Slot:
    """Where one worker runs: the CPU cores it is pinned to and the environment variables it starts with."""

    cores: tuple[int, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BlockJob:
    """How every block of a run is measured (picklable, for Dask)."""

    protocol: Protocol
    with_traces: bool  # False: a label pass, the un-profiled steps alone
    time_limit_s: float
    worker_per_model: bool = False  # a fresh worker process after every block (no block holds two models)


@dataclass
class Done:
    block: list
    results: list[dict]
    elapsed_s: float  # the block's wall time over its configurations


def check_worker_count(workers) -> int:
    """``workers`` as a count (0: one per core or GPU); an error naming ``--workers`` otherwise."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ItercastError(f"--workers takes 0 (one per core, or per GPU) or a positive whole number, not {workers!r}")
    return workers


def available_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def plan_slots(workers: int, device: str, threads: int, configurations: int,
               cores: list[int] | None = None, gpus: int | None = None) -> tuple[list[Slot], str | None]:
    """The workers of a collection and a warning, if any. On CPU each worker is pinned to ``threads`` cores of
    its own (0 workers: as many as the cores hold); with ``device`` "cuda" (no index) each worker sees one GPU
    of ``gpus`` (0 workers: one per GPU) and a share of the cores. Never more workers than configurations."""
    workers = check_worker_count(workers)
    cores = available_cores() if cores is None else list(cores)
    per_gpu = device == "cuda"
    if per_gpu and gpus is None:
        import torch

        gpus = torch.cuda.device_count()
    fits = max(1, gpus or 1) if per_gpu else max(1, len(cores) // max(threads, 1))
    count = max(1, min(workers or fits, max(configurations, 1)))
    warning = None
    if count > fits:
        what = f"{gpus} GPU(s)" if per_gpu else f"{len(cores)} core(s) at {threads} thread(s) each"
        warning = (f"warning: {count} workers for {what}: workers share {'GPUs' if per_gpu else 'cores'}, so labels "
                   f"will be slower to take and noisier")
    slots = []
    for index in range(count):
        if per_gpu:
            share = cores[index::count] or cores
            slots.append(Slot(tuple(share), (("CUDA_VISIBLE_DEVICES", str(index % max(gpus, 1))),)))
        else:
            width = max(threads, 1)
            slots.append(Slot(tuple(cores[(index * width + k) % len(cores)] for k in range(width))))
    return slots, warning


def deal(grouped: list[list], workers: int) -> list[list]:
    """The blocks in the order workers take them: as they are, but the last ``workers`` blocks split into single
    configurations, so that a worker that finishes early takes a share of the tail rather than idling."""
    if workers <= 1:
        return list(grouped)
    head, tail = grouped[:-workers], grouped[-workers:]
    return head + [[config] for block in tail for config in block]


def run_block(worker: Worker, block, job: BlockJob, trace_dir) -> list[dict]:
    """``block``'s results; a block whose worker was killed or died is measured again one configuration
    at a time, so that the one that hung or exhausted memory spares the others."""
    traces = trace_dir if job.with_traces else None
    results = worker.run(block, job.protocol, traces, job.time_limit_s)
    if worker.lost_last_block and len(block) > 1:
        results = [worker.run([config], job.protocol, traces, job.time_limit_s)[0] for config in block]
    if job.worker_per_model:
        worker.stop()
    return results


class LocalPool:
    """Worker processes on this machine, one per :class:`Slot`, each served by a thread of the caller's."""

    def __init__(self, slots: list[Slot], log_path=None):
        self.workers = [Worker(log_path=log_path, cores=slot.cores, env=dict(slot.env)) for slot in slots]

    def map(self, grouped: list[list], job: BlockJob, trace_dir: Path | None) -> Iterator[Done]:
        """A :class:`Done` per block as each finishes. Closing the iterator early (an exception in the caller,
        SIGTERM) kills the workers and drops the blocks in flight."""
        dealt = deal(grouped, len(self.workers))
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for block in dealt:
            todo.put(block)
        finished: queue.Queue = queue.Queue()
        stopping = threading.Event()
        threads = [threading.Thread(target=self._serve, args=(worker, todo, finished, stopping, job, trace_dir),
                                    daemon=True) for worker in self.workers]
        for thread in threads:
            thread.start()
        completed = False
        try:
            for _ in dealt:
                while True:
                    try:
                        item = finished.get(timeout=0.2)  # short waits: the main thread stays able to take signals
                        break
                    except queue.Empty:
                        continue
                if isinstance(item, BaseException):
                    raise item
                yield item
            completed = True
        finally:
            stopping.set()
            if not completed:
                for worker in self.workers:
                    worker.close()
            for thread in threads:
                thread.join()
            for worker in self.workers:
                worker.stop(kill=not completed)

    @staticmethod
    def _serve(worker: Worker, todo, finished, stopping, job: BlockJob, trace_dir):
        while not stopping.is_set():
            try:
                block = todo.get_nowait()
            except queue.Empty:
                return
            started = time.monotonic()
            try:
                results = run_block(worker, block, job, trace_dir)
            except WorkerClosed:
                return
            except BaseException as error:  # noqa: BLE001 - the caller's thread raises it
                finished.put(error)
                return
            if stopping.is_set():
                return
            finished.put(Done(block, results, round((time.monotonic() - started) / len(block), 3)))


class DaskPool:
    """Blocks measured on a dask.distributed cluster: each Dask worker thread keeps a worker process of its own
    (:func:`measure_remote`) and sends the traces back, so that the cluster's machines need no shared disk."""

    def __init__(self, client):
        self.client = client

    def map(self, grouped: list[list], job: BlockJob, trace_dir: Path | None) -> Iterator[Done]:
        from dask.distributed import as_completed

        threads = sum(self.client.nthreads().values()) or 1
        blocks = deal(grouped, threads)
        futures = self.client.map(measure_remote, blocks, job=job, pure=False)
        block_of = {future.key: block for future, block in zip(futures, blocks)}
        try:
            for future in as_completed(futures):
                results, traces, elapsed_s = future.result()
                for name, data in traces.items():
                    (trace_dir / name).write_bytes(data)
                yield Done(block_of[future.key], results, elapsed_s)
        finally:
            self.client.cancel(futures)


_remote = threading.local()  # each Dask worker thread's own worker process


def measure_remote(block, job: BlockJob) -> tuple[list[dict], dict[str, bytes], float]:
    """Runs on a Dask worker: ``block`` measured in a worker process of this thread's (started once), its traces
    (trace name -> gzipped bytes) read back; (results, traces, wall time over the configurations)."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        raise ItercastError("a Dask worker that runs as a daemonic process cannot start the collection's worker "
                            "processes: start the Dask workers with DASK_DISTRIBUTED__WORKER__DAEMON=False")
    if getattr(_remote, "worker", None) is None:
        _remote.worker = Worker()
    scratch = Path(tempfile.mkdtemp(prefix="itercast-collect-")) if job.with_traces else None
    started = time.monotonic()
    try:
        results = run_block(_remote.worker, block, job, scratch)
        traces = {}
        for config, result in zip(block, results, strict=True):
            path = None if scratch is None else scratch / trace_name(config.id)
            if result["status"] == "ok" and path is not None and path.exists():
                traces[path.name] = path.read_bytes()
        return results, traces, round((time.monotonic() - started) / len(block), 3)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
