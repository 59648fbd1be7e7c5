"""What a simulation run produced, and the summary metrics over it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.workload import Workload

LONG_JOBS_SHARE = 0.1  # the long jobs of long_jobs_slowdown: the tenth with the longest run time


@dataclass(frozen=True)
class SimResult:
    """Per-job outcomes (NaN for a job not yet started/finished) and run totals.

    ``segments`` (only when recorded) lists every stay of a job on GPUs:
    columns job, pool, start, end, and its node slices
    ``slice_node/slice_gpus[slice_offset[i]:slice_offset[i + 1]]``.
    """

    workload: Workload
    cluster: Cluster
    config: SimConfig
    first_start: np.ndarray
    finish: np.ndarray
    preemptions: np.ndarray
    busy_gpu_s: np.ndarray
    events: int
    wall_s: float
    segments: Optional[dict] = None

    @property
    def finished(self) -> np.ndarray:
        return ~np.isnan(self.finish)

    @property
    def jct(self) -> np.ndarray:
        """Job completion time (finish - submit) of the finished jobs."""
        return (self.finish - self.workload.submit)[self.finished]

    @property
    def queue_delay(self) -> np.ndarray:
        """First start - submit of the finished jobs."""
        return (self.first_start - self.workload.submit)[self.finished]

    def summary(self) -> dict:
        """The metrics as one JSON-ready dict; percentiles interpolate linearly."""
        finished = self.finished
        jct, queue = self.jct, self.queue_delay
        makespan = float(np.max(self.finish[finished]) - np.min(self.workload.submit)) if finished.any() else 0.0
        capacity = self.cluster.total_gpus * makespan
        return {
            "jobs": int(finished.sum()),
            **_jct_stats(jct),
            "p95_jct_s": _percentile(jct, 95),
            "max_jct_s": float(jct.max()) if len(jct) else 0.0,
            "long_jobs_slowdown": self._long_jobs_slowdown(),
            "avg_queue_s": _mean(queue),
            "p99_queue_s": _percentile(queue, 99),
            "makespan_s": makespan,
            "utilization": float(self.busy_gpu_s.sum() / capacity) if capacity else 0.0,
            "preemptions": int(self.preemptions.sum()),
            "events": int(self.events),
            "wall_s": self.wall_s,
            "jobs_per_s": len(self.workload) / self.wall_s if self.wall_s else 0.0,
            "events_per_s": self.events / self.wall_s if self.wall_s else 0.0,
            "by_gpus": self._by_gpus(jct, queue),
            **self._tardiness(),
        }

    def _long_jobs_slowdown(self) -> float:
        """Mean JCT over run time (on the fastest GPU type) of the longest-running tenth of the finished
        jobs: what starves under policies that favour short jobs, and an average JCT hides."""
        return long_jobs_slowdown(self.jct, self.workload.duration[self.finished])

    def _tardiness(self) -> dict:
        """With deadlines: how many finished jobs were late, and lateness (finish - deadline, 0 when on
        time) averaged over the jobs with a deadline and over the late ones."""
        deadlines = self.workload.deadlines
        if deadlines is None:
            return {}
        counted = self.finished & ~np.isnan(deadlines)
        lateness = np.maximum(0.0, self.finish[counted] - deadlines[counted])
        late = lateness > 0
        return {"late_jobs": int(late.sum()), "late_fraction": float(late.mean()) if len(late) else 0.0,
                "mean_lateness_s": _mean(lateness), "mean_lateness_of_late_s": _mean(lateness[late])}

    def _by_gpus(self, jct: np.ndarray, queue: np.ndarray) -> dict:
        gpus = self.workload.gpus[self.finished]
        breakdown = {}
        for count in np.unique(gpus):
            mask = gpus == count
            breakdown[str(int(count))] = {"jobs": int(mask.sum()), **_jct_stats(jct[mask]),
                                          "avg_queue_s": _mean(queue[mask])}
        return breakdown


def long_jobs_slowdown(jct: np.ndarray, run_s: np.ndarray) -> float:
    """Mean of JCT / run time over the tenth of the jobs with the longest run times (at least one job)."""
    if not len(run_s):
        return 0.0
    longest = np.argsort(run_s, kind="stable")[-max(1, int(LONG_JOBS_SHARE * len(run_s))):]
    return _mean(jct[longest] / run_s[longest])


def _jct_stats(jct: np.ndarray) -> dict:
    return {"avg_jct_s": _mean(jct), "p50_jct_s": _percentile(jct, 50), "p99_jct_s": _percentile(jct, 99)}


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else 0.0


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0
