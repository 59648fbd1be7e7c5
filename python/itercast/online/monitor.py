"""In-process online prediction: profile a few training steps now and then, predict them, report.

``Monitor.step()`` is called once per iteration, like ``prof.step()``. The
Monitor times every iteration (wall time between calls); every so often it
starts a ``torch.profiler`` for one cycle of ``warmup`` + ``active`` steps and
drops it afterwards, so between cycles a step costs a clock read and nothing
else (a long-lived profiler's ``step()`` alone costs more; docs/decisions.md). Cycles
keep to an overhead budget and spread out while the predictions stay the same
(:class:`Cadence`). With the caller's own profiler it steps that one instead.

Where the trace goes: torch hands Kineto's trace out only as a file
(``_ProfilerResult.save(path)``; the Python exporter in torch 2.13 is
private, experimental and also writes a path). Each cycle is exported to a
scratch directory on a memory file system (``/dev/shm`` when there is one),
streamed once into the native window stream by the prediction process
(:mod:`itercast.online.predict_worker`) and deleted: the JSON never reaches a disk.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable, Iterable

import itercast
from itercast.online.records import StepPrediction
from itercast.online.targets import ModelLike, load_targets
from itercast.predict import Predictor

log = logging.getLogger("itercast.online")

MEMORY_FILESYSTEM = Path("/dev/shm")
# Un-profiled iterations the measured time is the median of.
MEASURED_WINDOW = 64
# Un-profiled iterations after a cycle whose extra time still counts in its cost (under a budget):
# the profiler's teardown, colder caches and the prediction process beside the training slow them
# (counting only the profiled steps overshot the budget; docs/decisions.md).
TAIL_STEPS = 50
# Half the 1% a user should not notice: what the Monitor cannot see (the prediction process's pressure
# on shared caches and memory bandwidth) used up the rest with a 1% budget (docs/decisions.md).
DEFAULT_MAX_OVERHEAD = 0.005
# While predictions stay within 2% from one cycle to the next, cycles spread out twice as far each
# time, up to 32 times ``every`` (6,400 steps at the default ``every``).
DEFAULT_BACKOFF = 2.0
DEFAULT_STABLE_WITHIN = 0.02
MAX_EVERY_TIMES = 32


class Cadence:
    """When the Monitor's cycles start: first after ``first`` steps, then every ``every`` steps,
    or further apart when a cycle's cost (its steps' extra wall time, then the CPU time of its
    prediction once that is known) would exceed ``max_overhead`` of the wall time in between.

    Profiling a job whose predictions no longer change tells nothing new, so while each cycle's
    predicted iteration time agrees with the previous cycle's within ``stable_within`` (relative,
    on every target) the spacing grows ``backoff`` times, up to ``max_every`` steps (default
    ``32 * every``); a prediction that disagrees (other shapes, another phase) brings it back to
    ``every``. The budget still applies: cycles are the larger of the two apart. ``backoff=1``
    (or None) keeps the spacing at ``every``.
    """

    def __init__(self, first: int, every: int, cycle_steps: int, max_overhead: float | None,
                 backoff: float | None = DEFAULT_BACKOFF, stable_within: float = DEFAULT_STABLE_WITHIN,
                 max_every: int | None = None):
        if first < 0:
            raise ValueError("first must be >= 0")
        if every <= cycle_steps + 1:
            raise ValueError(f"every ({every}) must exceed warmup + active + 1 ({cycle_steps + 1})")
        backoff = 1.0 if backoff is None else backoff
        if not (1.0 <= backoff < math.inf):
            raise ValueError(f"backoff ({backoff}) must be >= 1 (1 or None: cycles stay every {every} steps)")
        if not (0.0 <= stable_within < math.inf):
            raise ValueError(f"stable_within ({stable_within}) must be a relative tolerance >= 0")
        max_every = MAX_EVERY_TIMES * every if max_every is None else max_every
        if max_every < every:
            raise ValueError(f"max_every ({max_every}) must be >= every ({every})")
        self.first, self.every, self.max_overhead = first, every, max_overhead
        self.backoff, self.stable_within, self.max_every = backoff, stable_within, max_every
        self.spacing = every  # steps between cycles, before the budget
        self._last_start: int | None = None  # where the last cycle was placed
        self._cycle_paid_steps = 0  # steps the last cycle's own cost pays for
        self._billed_steps = 0  # steps costs learnt later pay for
        self._last_prediction: dict[str, float] | None = None

    @property
    def start(self) -> int:
        """The step the next cycle starts at."""
        if self._last_start is None:
            return self.first + self._billed_steps
        return self._last_start + max(self.spacing, self._cycle_paid_steps) + self._billed_steps

    def cycle_done(self, cost_s: float, step_s: float | None) -> None:
        """Places the next cycle, given what the last one cost the training beyond normal iterations."""
        self._last_start = self.start
        self._cycle_paid_steps, self._billed_steps = self._steps_paying_for(cost_s, step_s), 0

    def bill(self, cost_s: float, step_s: float | None) -> None:
        """Moves the next cycle further by a cost learnt later: a prediction's CPU time."""
        self._billed_steps += self._steps_paying_for(cost_s, step_s)

    def predicted(self, iteration_ms: dict[str, float]) -> None:
        """Backs off or resets the spacing, given a cycle's predicted iteration time per target;
        applies to the next cycle not yet started."""
        previous, self._last_prediction = self._last_prediction, iteration_ms
        if previous is not None and self._agree(previous, iteration_ms):
            self.spacing = min(self.max_every, math.ceil(self.spacing * self.backoff))
        else:
            self.spacing = self.every

    def _agree(self, previous: dict[str, float], current: dict[str, float]) -> bool:
        return previous.keys() == current.keys() and all(
            abs(current[key] - ms) <= self.stable_within * ms for key, ms in previous.items())

    def _steps_paying_for(self, cost_s: float, step_s: float | None) -> int:
        """Iterations whose wall time ``cost_s`` is ``max_overhead`` of."""
        if not self.max_overhead or not step_s:
            return 0
        return math.ceil(cost_s / (self.max_overhead * step_s))


def this_cpu_key() -> str | None:
    """This process's CPU and torch's intra-op threads as a hardware key, as a collection made here names
    them (predict.dataset.hardware_key); None without torch."""
    try:
        import torch
    except ImportError:
        return None
    from itercast.collect.hardware import cpu_model
    from itercast.predict.dataset import hardware_key

    return hardware_key({"device": "cpu", "cpu_model": cpu_model(), "threads": torch.get_num_threads()})


class Monitor:
    """Live iteration-time predictions from inside a training loop.

    ``models``: a fitted Predictor or model-file path, or several; ``hardware``
    narrows their targets. ``total_steps`` (iterations in the whole run) gives
    ETAs. Without ``profiler`` the Monitor profiles ``warmup`` + ``active``
    steps, first after ``first`` steps, then every ``every`` steps, spaced
    further when needed to keep profiling under ``max_overhead`` of the wall
    time, and ``backoff`` times further after each cycle whose predictions
    agree with the last cycle's within ``stable_within``, up to ``max_every``
    steps apart (see :class:`Cadence`). With ``profiler`` (a
    ``torch.profiler.profile`` the caller starts and stops, on its own
    schedule) the Monitor steps it and predicts each trace it produces, after
    the caller's own ``on_trace_ready``.

    Each prediction lands in :attr:`history`, goes to ``on_prediction`` (called
    on the Monitor's reader thread) and is logged at INFO on the ``itercast.online`` logger.
    """

    def __init__(self, models: ModelLike | Iterable[ModelLike], *, hardware: str | Iterable[str] | None = None,
                 total_steps: int | None = None, every: int = 200, active: int = 3, warmup: int = 1,
                 first: int = 10, max_overhead: float | None = DEFAULT_MAX_OVERHEAD,
                 backoff: float | None = DEFAULT_BACKOFF, stable_within: float = DEFAULT_STABLE_WITHIN,
                 max_every: int | None = None, on_prediction: Callable[[StepPrediction], None] | None = None,
                 profiler=None):
        if active < 1 or warmup < 0:
            raise ValueError("need active >= 1 and warmup >= 0")
        self._models = [models] if isinstance(models, (Predictor, str, os.PathLike)) else list(models)
        # The traces are this process's: a CPU trace names no CPU, so the Monitor says which (a GPU trace
        # names its device), and a target of this machine is priced by the hybrid (Predictor.predict).
        self.targets = load_targets(self._models, hardware, trace_hardware=this_cpu_key())
        self.total_steps, self.on_prediction = total_steps, on_prediction
        self.history: list[StepPrediction] = []
        self.steps = 0
        self.warmup, self.active = warmup, active
        self._user_profiler = profiler
        self._cadence = None if profiler is not None else Cadence(first, every, warmup + active, max_overhead,
                                                                  backoff, stable_within, max_every)
        self._cycle = None  # the Monitor's profiler while a cycle runs
        self._cycle_start = 0
        self._user_handler = None
        self._durations: deque[float] = deque(maxlen=MEASURED_WINDOW)
        self._last_step_at: float | None = None
        self._interval_profiled = False
        self._cycle_cost_s: float | None = None  # what the cycle being accounted cost beyond normal steps
        self._tail_steps = TAIL_STEPS if self._cadence is not None and self._cadence.max_overhead else 0
        self._tail_left = 0
        self._cycles = 0
        self._unbilled_prediction_s = 0.0  # prediction CPU time not yet counted in the cadence
        self._unapplied_predictions: list[dict[str, float]] = []  # per cycle, not yet given to the cadence
        self._scratch: Path | None = None
        self._worker: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self._pending = 0
        self._answered = threading.Condition()

    # -- the training thread -----------------------------------------------------------------------
    def __enter__(self) -> "Monitor":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self._worker is not None:
            return
        self._scratch = Path(tempfile.mkdtemp(prefix="itercast-monitor-", dir=_scratch_parent()))
        self._start_worker()
        if self._user_profiler is not None:
            if not self._user_profiler.record_shapes:
                log.warning("the profiler does not record shapes: predictions will be poor")
            self._user_handler = self._user_profiler.on_trace_ready
            self._user_profiler.on_trace_ready = self._on_trace_ready

    def step(self) -> None:
        """Call once per training iteration, at its end (in place of ``prof.step()``)."""
        if self._worker is None:
            self.start()
        now = time.perf_counter()
        if self._last_step_at is not None:
            self._account(now - self._last_step_at)
        self._last_step_at = now
        # What the profiler does in this call (start, stop, export) falls in the next interval.
        self._interval_profiled = self._step_user_profiler() if self._cadence is None else self._step_cycle()
        self.steps += 1

    def _step_cycle(self) -> bool:
        """Starts, steps or ends the Monitor's own profiling cycle; True if a profiler was involved."""
        if self._cycle is None:
            if self._cycle_cost_s is not None:  # the last cycle (its stop, export and tail) is still being paid for
                return False
            # Under a budget, no new cycle before the last one's prediction is in and paid for:
            # on a busy machine the niced prediction process answers late, and cycles would pile up.
            if self._cadence.max_overhead and self._pending:
                return False
            if self._unbilled_prediction_s or self._unapplied_predictions:  # both set before _pending drops
                self._apply_answers()
            if self.steps + 1 < self._cadence.start:
                return False
            from torch.profiler import profile, schedule

            self._cycle_start = self.steps + 1
            self._cycle = profile(schedule=schedule(wait=0, warmup=self.warmup, active=self.active, repeat=1),
                                  on_trace_ready=self._on_trace_ready, record_shapes=True)
            self._cycle.start()
            return True
        self._cycle.step()  # the step after the last active one stops the trace and exports it
        if self.steps + 1 - self._cycle_start >= self.warmup + self.active:
            self._cycle.stop()
            self._cycle = None
        return True

    def _step_user_profiler(self) -> bool:
        from torch.profiler import ProfilerAction

        before = self._user_profiler.current_action
        self._user_profiler.step()
        return ProfilerAction.NONE not in (before, self._user_profiler.current_action)

    def _account(self, seconds: float) -> None:
        """Files one iteration's wall time: measured, or part of the cost of a profiling cycle."""
        if self._interval_profiled:
            self._cycle_cost_s = (self._cycle_cost_s or 0.0) + seconds - (self.measured_s or 0.0)
            self._tail_left = self._tail_steps
            return
        self._durations.append(seconds)
        if self._cycle_cost_s is None:  # between cycles: nothing more per step than this
            return
        if self._tail_left > 0:
            self._cycle_cost_s += seconds - self.measured_s
            self._tail_left -= 1
        if self._tail_left == 0:
            if self._cadence is not None:
                self._cadence.cycle_done(self._cycle_cost_s, self.measured_s)
            self._cycle_cost_s = None

    def _apply_answers(self) -> None:
        """Gives the cadence what the reader thread has learnt: each cycle's predicted iteration
        time, and the CPU time predicting took (it runs beside the training, but on a busy machine
        it takes from it)."""
        with self._answered:
            cost_s, self._unbilled_prediction_s = self._unbilled_prediction_s, 0.0
            predictions, self._unapplied_predictions = self._unapplied_predictions, []
        self._cadence.bill(cost_s, self.measured_s)
        for iteration_ms in predictions:
            self._cadence.predicted(iteration_ms)

    @property
    def measured_s(self) -> float | None:
        """This machine's iteration time: median of recent un-profiled iterations."""
        return statistics.median(self._durations) if self._durations else None

    def _on_trace_ready(self, prof) -> None:
        self._cycles += 1
        path = self._scratch / f"cycle{self._cycles}.pt.trace.json"
        prof.export_chrome_trace(str(path))
        measured = self.measured_s
        self._submit({"path": str(path), "measured_ms": measured * 1e3 if measured is not None else None,
                      "total_steps": self.total_steps,
                      "step_offset": self._cycle_start if self._user_profiler is None else 0})
        if self._user_handler is not None:
            self._user_handler(prof)

    def flush(self) -> None:
        """Waits until every trace exported so far has been predicted."""
        with self._answered:
            self._answered.wait_for(lambda: self._pending == 0)

    def close(self) -> None:
        """Ends a cycle in progress (predicting what it recorded) and waits for every prediction."""
        if self._worker is None:
            return
        if self._cycle is not None:
            self._cycle.stop()
            self._cycle = None
        if self._user_profiler is not None:
            self._user_profiler.on_trace_ready = self._user_handler
        self._worker.stdin.close()
        self._reader.join()
        self._worker.wait()
        self._worker = None
        shutil.rmtree(self._scratch, ignore_errors=True)

    @property
    def latest(self) -> StepPrediction | None:
        return self.history[-1] if self.history else None

    # -- the prediction process and the thread that reads its answers -------------------------------
    def _start_worker(self) -> None:
        package_root = str(Path(itercast.__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root,
                                                                         os.environ.get("PYTHONPATH")])),
               # One thread that sleeps when idle: OpenMP's default spins on every core, the training's too.
               "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
        self._worker = subprocess.Popen([sys.executable, "-m", "itercast.online.predict_worker"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._send({"models": self._model_files(), "hardware": [t.hardware for t in self.targets],
                    "trace_hardware": this_cpu_key()})
        self._reader = threading.Thread(target=self._read_answers, name="itercast-monitor", daemon=True)
        self._reader.start()

    def _model_files(self) -> list[str]:
        """The models as files the prediction process can load (fitted Predictors saved to scratch)."""
        files = []
        for index, model in enumerate(self._models):
            if isinstance(model, Predictor):
                model.save(self._scratch / f"model{index}.itc")
                model = self._scratch / f"model{index}.itc"
            files.append(os.fspath(model))
        return files

    def _send(self, message: dict) -> None:
        self._worker.stdin.write(json.dumps(message) + "\n")
        self._worker.stdin.flush()

    def _submit(self, job: dict) -> None:
        with self._answered:
            self._pending += 1
        try:
            self._send(job)
        except OSError as error:  # the process is gone; the reader has said why
            log.warning("itercast monitor: cannot send a trace to the prediction process: %s", error)
            self._answer_received()

    def _answer_received(self) -> None:
        with self._answered:
            self._pending -= 1
            self._answered.notify_all()

    def _read_answers(self) -> None:
        for line in self._worker.stdout:
            self._report(json.loads(line))
            self._answer_received()
        with self._answered:
            if self._pending:
                log.error("itercast monitor: the prediction process ended with %d traces unanswered",
                          self._pending)
            self._pending = 0
            self._answered.notify_all()

    def _report(self, answer: dict) -> None:
        with self._answered:
            self._unbilled_prediction_s += answer["cpu_s"]
        if "error" in answer:
            log.warning("itercast monitor: cannot predict a profiled cycle: %s", answer["error"])
            return
        records = [StepPrediction(**fields) for fields in answer["records"]]
        if records and self._cadence is not None:
            with self._answered:
                self._unapplied_predictions.append(_median_predicted_ms(records))
        for record in records:
            self.history.append(record)
            log.info("itercast %s", record.describe())
            if self.on_prediction is not None:
                try:
                    self.on_prediction(record)
                except Exception:  # a failing callback must not stop the predictions
                    log.exception("itercast monitor: on_prediction raised")


def _median_predicted_ms(records: list[StepPrediction]) -> dict[str, float]:
    """A cycle's predicted iteration time per target: the median over its profiled steps."""
    return {key: statistics.median(record.predicted_ms[key] for record in records)
            for key in records[0].predicted_ms}


def _scratch_parent() -> str | None:
    """A memory file system for exported traces if there is one, else the temp directory."""
    if MEMORY_FILESYSTEM.is_dir() and os.access(MEMORY_FILESYSTEM, os.W_OK):
        return str(MEMORY_FILESYSTEM)
    return None
