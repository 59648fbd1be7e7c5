"""A child process that measures configurations, one at a time.

The child is reused across configurations (importing torch costs seconds) and
replaced when it runs past the time limit or dies, so neither a hung model nor
one that exhausts memory stops the collection. Under the "fresh-loop" label
protocol it measures each configuration in a process forked from itself, which
has imported torch and run nothing else, as a user's training script starts.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import select
import signal
import sys

from itercast.errors import ItercastError


def _redirect_output(log_path):
    """Sends the child's stdout and stderr (Kineto prints a line per profiling run) to a log."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def _settle(cores, env):
    """The child's place before torch loads: its environment (CUDA_VISIBLE_DEVICES picks its GPU), its cores,
    and death with its parent, so that a collection killed outright leaves no worker measuring on."""
    os.environ.update(env)
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)
    _die_with_parent()


def _die_with_parent():
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _serve(connection, log_path, cores=(), env=None):
    if log_path:
        _redirect_output(log_path)
    _settle(cores, env or {})
    import torch  # noqa: F401 - imported before "ready", so time limits exclude it

    from itercast.collect.measure import measure_block

    connection.send("ready")
    while True:
        request = connection.recv()
        if request is None:
            return
        configs, protocol, trace_dir, time_limit_s = request
        if protocol.label_protocol == "fresh-loop":
            reply = [in_fresh_process(measure_one, (config, protocol, trace_dir), time_limit_s) for config in configs]
        else:
            reply = measure_block(configs, protocol, trace_dir)
            release_memory()
        connection.send(reply)


def measure_one(config, protocol, trace_dir) -> dict:
    """One configuration's manifest fields with status ok, or its failure's."""
    from itercast.collect.measure import failure, measure

    try:
        return {"status": "ok", **measure(config, protocol, trace_dir)}
    except Exception as error:  # noqa: BLE001 - every failure becomes a manifest row
        return failure(error)


def in_fresh_process(function, args: tuple, time_limit_s: float) -> dict:
    """``function(*args)`` in a child forked from this process, which has imported torch and run nothing: the
    child starts as a user's training script does, whatever configurations ran before it. Its result, or a
    timeout, oom or error status when it runs past ``time_limit_s`` or dies."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        _die_with_parent()
        code = 0
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pickle.dump(function(*args), pipe)
        except BaseException:  # noqa: BLE001 - the parent reads a missing result as the child's death
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        ready, _, _ = select.select([pipe], [], [], time_limit_s)
        data = pipe.read() if ready else b""
    if not ready:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not ready:
        return {"status": "timeout", "message": f"exceeded the {time_limit_s:g} s limit"}
    if data:
        return pickle.loads(data)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL  # the out-of-memory killer's
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return {"status": "oom" if killed else "error", "message": f"measuring process died with exit code {code}"}


def release_memory():
    """Frees the finished configuration's tensors, so the next one starts with an empty device."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


STARTUP_LIMIT_S = 300.0
BLOCK_SLACK_S = 30.0


class WorkerClosed(ItercastError):
    """A closed worker was asked to run (its collection is stopping)."""


class Worker:
    def __init__(self, log_path=None, cores=(), env=None):
        """``cores``: the CPU cores its process is pinned to (all, if empty); ``env``: variables it starts with."""
        self._log_path = str(log_path) if log_path else None
        self._cores = tuple(cores)
        self._env = dict(env or {})
        self._closed = False
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self._connection = None
        self.lost_last_block = False  # whether the last run's process was killed or died

    def run(self, configs, protocol, trace_dir, time_limit_s: float) -> list[dict]:
        """Per configuration (collect.measure.measure_block), the measured fields or a status (timeout, oom,
        error) with a message; a block that runs past ``time_limit_s`` per configuration, or whose process
        dies, gives every configuration that status.

        ``trace_dir`` None times the un-profiled steps only (a label pass)."""
        self.lost_last_block = False
        if self._closed:
            raise WorkerClosed("the collection is stopping")
        if self._process is None:
            self._start()
        # Beyond the fresh processes' own limits, so that they time out first and spare the worker.
        limit_s = time_limit_s * len(configs) + BLOCK_SLACK_S
        self._connection.send((list(configs), protocol, None if trace_dir is None else str(trace_dir), time_limit_s))
        try:
            if not self._connection.poll(limit_s):
                self.stop(kill=True)
                lost = {"status": "timeout", "message": f"exceeded the {time_limit_s:g} s limit"}
            else:
                return self._connection.recv()
        except (EOFError, ConnectionError, OSError):
            if self._closed:
                raise WorkerClosed("the collection is stopping") from None
            lost = self._died()
        self.lost_last_block = True
        return [dict(lost) for _ in configs]

    def _died(self) -> dict:
        self._process.join(5)
        code = self._process.exitcode
        self.stop(kill=True)
        # SIGKILL is what the kernel's out-of-memory killer sends.
        status = "oom" if code == -9 else "error"
        return {"status": status, "message": f"worker process died with exit code {code}"}

    def _start(self):
        self._connection, child_end = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child_end, self._log_path, self._cores, self._env),
                                              daemon=True)
        self._process.start()
        child_end.close()
        try:
            ready = self._connection.poll(STARTUP_LIMIT_S) and self._connection.recv() == "ready"
        except (EOFError, ConnectionError):
            ready = False
        if not ready:
            self.stop(kill=True)
            if self._closed:
                raise WorkerClosed("the collection is stopping")
            raise ItercastError(f"the collection worker did not start (see {self._log_path})")

    def close(self):
        """Kills the process, whatever it is doing, and refuses further runs (from any thread)."""
        self._closed = True
        process = self._process
        if process is not None and process.is_alive():
            process.kill()

    def stop(self, kill: bool = False):
        if self._process is None:
            return
        if kill:
            self._process.kill()
        else:
            try:
                self._connection.send(None)
            except (BrokenPipeError, ConnectionError):
                self._process.kill()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._connection.close()
        self._process = None
        self._connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()
