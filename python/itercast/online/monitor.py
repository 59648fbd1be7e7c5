"""In-process online prediction: profile a few training steps now and then, predict them, report.

``Monitor.step()`` is called once per iteration, like ``prof.step()``. The
Monitor times every iteration (wall time between calls), drives a
``torch.profiler`` schedule of its own (or steps the user's profiler), and
after each profiling cycle predicts every profiled step for every target
hardware on a background thread, so the training thread only pays for the
profiled steps and the export of their trace.

Where the trace goes: torch can hand Kineto's trace out only as a file
(``_ProfilerResult.save(path)``; the Python exporter in torch 2.13 is
private, experimental and also writes a path). The Monitor therefore exports
each cycle to a scratch directory on a memory file system (``/dev/shm`` when
there is one), streams it once into the native window stream and deletes it:
the JSON never reaches a disk.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import shutil
import statistics
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from itercast.errors import ItercastError
from itercast.online.feed import iterations_by_target, predict_file
from itercast.online.targets import ModelLike, load_targets
from itercast.predict import Prediction

log = logging.getLogger("itercast.online")

MEMORY_FILESYSTEM = Path("/dev/shm")
# Un-profiled iterations the measured time is the median of.
MEASURED_WINDOW = 64


@dataclass(frozen=True)
class StepPrediction:
    """What the Monitor knows after one profiled training step."""

    step: int  # the profiler's step number (ProfilerStep#N)
    predicted_ms: dict[str, float]  # per target hardware: an iteration without the profiler attached
    measured_ms: float | None  # here: median wall time of recent un-profiled iterations
    profiled_ms: float | None  # this step's own duration, under the profiler
    remaining: int | None  # iterations left after this one, when the Monitor knows the total
    unseen_op_fraction: dict[str, float] = field(default_factory=dict)

    def eta_s(self, remaining: int | None = None) -> dict[str, float]:
        """Seconds to run ``remaining`` iterations (default: those left after this step).

        One entry per target hardware, plus ``"measured"`` at this machine's measured rate.
        """
        remaining = self.remaining if remaining is None else remaining
        if remaining is None:
            return {}
        rates = dict(self.predicted_ms)
        if self.measured_ms is not None:
            rates["measured"] = self.measured_ms
        return {key: ms * remaining / 1e3 for key, ms in rates.items()}

    def to_dict(self) -> dict:
        return {"step": self.step, "predicted_ms": self.predicted_ms, "measured_ms": self.measured_ms,
                "profiled_ms": self.profiled_ms, "remaining": self.remaining, "eta_s": self.eta_s(),
                "unseen_op_fraction": self.unseen_op_fraction}

    def describe(self) -> str:
        """One log line."""
        eta = self.eta_s()
        measured = f"{self.measured_ms:.2f} ms" if self.measured_ms is not None else "not yet measured"
        parts = [f"step {self.step}: here {measured}" + _eta_text(eta.get("measured"))]
        parts += [f"{key} {ms:.2f} ms" + _eta_text(eta.get(key)) for key, ms in self.predicted_ms.items()]
        return "; ".join(parts)


def _eta_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f" (ETA {hours}:{minutes:02d}:{secs:02d})"


def step_predictions(predictions: dict[str, Prediction], measured_ms: float | None,
                     total_steps: int | None) -> list[StepPrediction]:
    """One record per profiled step found in the trace, every target's prediction in it."""
    records = []
    unseen = {key: p.unseen_fraction for key, p in predictions.items()}
    for iteration, predicted in iterations_by_target(predictions):
        step = _step_number(iteration.name)
        if step is None:
            continue
        remaining = max(0, total_steps - step - 1) if total_steps is not None else None
        records.append(StepPrediction(step, predicted, measured_ms, iteration.measured_ms, remaining, unseen))
    return records


def _step_number(name: str) -> int | None:
    prefix, _, number = name.partition("#")
    return int(number) if prefix == "ProfilerStep" and number.isdigit() else None


class Cadence:
    """The Monitor's profiler schedule: a cycle of ``warmup`` + ``active`` steps, first after
    ``first`` steps, then every ``every`` steps, or further apart when the last cycle's
    measured cost would exceed ``max_overhead`` of the wall time in between.
    """

    def __init__(self, first: int, every: int, warmup: int, active: int, max_overhead: float | None):
        if active < 1 or warmup < 0 or first < 0:
            raise ValueError("need active >= 1, warmup >= 0 and first >= 0")
        if every <= warmup + active + 1:
            raise ValueError(f"every ({every}) must exceed warmup + active + 1 ({warmup + active + 1})")
        self.start, self.every, self.warmup, self.active = first, every, warmup, active
        self.max_overhead = max_overhead

    def __call__(self, step: int):
        from torch.profiler import ProfilerAction

        offset = step - self.start
        if offset < 0 or offset >= self.warmup + self.active:
            return ProfilerAction.NONE
        if offset < self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if offset == self.warmup + self.active - 1 else ProfilerAction.RECORD

    def cycle_done(self, cost_s: float, step_s: float | None) -> None:
        """Places the next cycle, given what the last one cost beyond normal iterations."""
        gap = self.every
        if self.max_overhead and step_s:
            gap = max(gap, math.ceil(cost_s / (self.max_overhead * step_s)))
        self.start += gap


class Monitor:
    """Live iteration-time predictions from inside a training loop.

    ``models``: a fitted Predictor or model-file path, or several; ``hardware``
    narrows their targets. ``total_steps`` (iterations in the whole run) gives
    ETAs. Without ``profiler`` the Monitor runs its own: ``warmup`` + ``active``
    steps first after ``first`` steps, then every ``every`` steps, spaced further
    when needed to keep profiling under ``max_overhead`` of the wall time. With
    ``profiler`` (a ``torch.profiler.profile`` the caller starts and stops) the
    Monitor steps it and predicts each trace it produces, after the caller's
    own ``on_trace_ready``.

    Each prediction lands in :attr:`history`, goes to ``on_prediction`` (called
    on the Monitor's thread) and is logged at INFO on the ``itercast.online`` logger.
    """

    def __init__(self, models: ModelLike | Iterable[ModelLike], *, hardware: str | Iterable[str] | None = None,
                 total_steps: int | None = None, every: int = 200, active: int = 3, warmup: int = 1,
                 first: int = 10, max_overhead: float | None = 0.01,
                 on_prediction: Callable[[StepPrediction], None] | None = None, profiler=None):
        self.targets = load_targets(models, hardware)
        self.total_steps, self.on_prediction = total_steps, on_prediction
        self.history: list[StepPrediction] = []
        self.steps = 0
        self._cadence = None if profiler is not None else Cadence(first, every, warmup, active, max_overhead)
        self._profiler, self._owns_profiler = profiler, profiler is None
        self._user_handler = None
        self._durations: deque[float] = deque(maxlen=MEASURED_WINDOW)
        self._last_step_at: float | None = None
        self._last_action = None
        self._cycle_cost_s = 0.0
        self._jobs: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._scratch: Path | None = None
        self._cycles = 0

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
        self._worker = threading.Thread(target=self._work, name="itercast-monitor", daemon=True)
        self._worker.start()
        if self._owns_profiler:
            from torch.profiler import profile

            self._profiler = profile(schedule=self._cadence, on_trace_ready=self._on_trace_ready,
                                     record_shapes=True)
            self._profiler.start()
        else:
            if not self._profiler.record_shapes:
                log.warning("the profiler does not record shapes: predictions will be poor")
            self._user_handler = self._profiler.on_trace_ready
            self._profiler.on_trace_ready = self._on_trace_ready

    def step(self) -> None:
        """Call once per training iteration, at its end (in place of ``prof.step()``)."""
        if self._worker is None:
            self.start()
        now = time.perf_counter()
        action = self._profiler.current_action
        if self._last_step_at is not None:
            self._account(now - self._last_step_at, action)
        self._last_step_at = now
        self._profiler.step()
        self.steps += 1

    def _account(self, seconds: float, action) -> None:
        """Files one iteration's wall time: measured, or the cost of profiling it."""
        from torch.profiler import ProfilerAction

        # The interval after a cycle's last step holds the profiler's stop and the trace export.
        profiled = action != ProfilerAction.NONE or (self._last_action not in (None, ProfilerAction.NONE))
        cycle_ended = action == ProfilerAction.NONE and self._last_action not in (None, ProfilerAction.NONE)
        self._last_action = action
        if not profiled:
            self._durations.append(seconds)
            return
        self._cycle_cost_s += seconds - (self.measured_s or 0.0)
        if cycle_ended and self._cadence is not None:
            self._cadence.cycle_done(self._cycle_cost_s, self.measured_s)
            self._cycle_cost_s = 0.0

    @property
    def measured_s(self) -> float | None:
        """This machine's iteration time: median of recent un-profiled iterations."""
        return statistics.median(self._durations) if self._durations else None

    def _on_trace_ready(self, prof) -> None:
        self._cycles += 1
        path = self._scratch / f"cycle{self._cycles}.pt.trace.json"
        prof.export_chrome_trace(str(path))
        measured = self.measured_s
        self._jobs.put((path, measured * 1e3 if measured is not None else None))
        if self._user_handler is not None:
            self._user_handler(prof)

    def flush(self) -> None:
        """Waits until every trace exported so far has been predicted."""
        if self._worker is not None:
            self._jobs.join()

    def close(self) -> None:
        """Stops the Monitor's own profiler (predicting a cycle in progress), waits for predictions."""
        if self._worker is None:
            return
        if self._owns_profiler:
            self._profiler.stop()
        else:
            self._profiler.on_trace_ready = self._user_handler
        self._jobs.put(None)
        self._worker.join()
        self._worker = None
        shutil.rmtree(self._scratch, ignore_errors=True)

    @property
    def latest(self) -> StepPrediction | None:
        return self.history[-1] if self.history else None

    # -- the Monitor's thread ----------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                self._predict(*job)
            finally:
                self._jobs.task_done()

    def _predict(self, path: Path, measured_ms: float | None) -> None:
        try:
            predictions = predict_file(self.targets, path)
        except ItercastError as error:
            log.warning("itercast monitor: cannot predict a profiled cycle: %s", error)
            return
        finally:
            os.unlink(path)
        for record in step_predictions(predictions, measured_ms, self.total_steps):
            self.history.append(record)
            log.info("itercast %s", record.describe())
            if self.on_prediction is not None:
                try:
                    self.on_prediction(record)
                except Exception:  # a failing callback must not stop the predictions
                    log.exception("itercast monitor: on_prediction raised")


def _scratch_parent() -> str | None:
    """A memory file system for exported traces if there is one, else the temp directory."""
    if MEMORY_FILESYSTEM.is_dir() and os.access(MEMORY_FILESYSTEM, os.W_OK):
        return str(MEMORY_FILESYSTEM)
    return None
