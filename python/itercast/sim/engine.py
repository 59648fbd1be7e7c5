"""Runs a workload on a cluster under a configuration, in the native
event-driven core (csrc/sim)."""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from itercast import _native
from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.errors import SimConfigError, UnschedulableJobError, WorkloadError
from itercast.sim.estimates import duration_estimates
from itercast.sim.metrics import SimResult
from itercast.sim.workload import Workload

_ESTIMATE_FIELDS = ("estimate", "estimate_error", "estimate_seed")


class Simulation:
    """A simulation that can be advanced in steps and re-configured between
    them (what an online tuner needs). ``start_time`` (default: the first
    submission) is where the clock starts; jobs submitted earlier are queued
    then, and jobs marked ``running`` in the workload hold GPUs from then on."""

    def __init__(self, workload: Workload, cluster: Cluster, config: Optional[SimConfig] = None, *,
                 start_time: Optional[float] = None, record_segments: bool = False):
        self.workload = workload
        self.cluster = cluster
        self.config = config or SimConfig()
        self.wall_s = 0.0
        _check_workload(workload)
        durations = _durations_by_pool(workload, cluster)
        _check_fits(workload, cluster, durations)
        n = len(workload)
        self._native = _native.Simulator(
            pools=[(pool.nodes, pool.gpus_per_node) for pool in cluster.pools],
            submit=workload.submit,
            gpus=workload.gpus.astype(np.int32),
            duration=durations,
            estimate=duration_estimates(workload, self.config),
            attained_gpu_s=_column(workload.attained_gpu_s, n),
            done_fraction=_column(workload.done_fraction, n),
            running=_column(workload.running, n).astype(np.uint8),
            config=_native_config(self.config),
            start_time=np.nan if start_time is None else float(start_time),
            record_segments=record_segments,
        )
        self._record_segments = record_segments

    @property
    def now(self) -> float:
        return self._native.now

    def run(self, until: Optional[float] = None) -> bool:
        """Processes events up to ``until`` (default: the end); True when every job finished."""
        began = time.perf_counter()
        try:
            return self._native.run_until(np.inf if until is None else float(until))
        finally:
            self.wall_s += time.perf_counter() - began

    def set_config(self, config: SimConfig) -> None:
        """Switches policy settings from now on; estimates are fixed at construction."""
        changed = [name for name in _ESTIMATE_FIELDS if getattr(config, name) != getattr(self.config, name)]
        if changed:
            raise SimConfigError(f"{', '.join(changed)} cannot change during a simulation")
        self.config = config
        self._native.set_config(_native_config(config))

    def result(self) -> SimResult:
        outcome = self._native.outcome()
        return SimResult(
            workload=self.workload, cluster=self.cluster, config=self.config,
            first_start=outcome["first_start"], finish=outcome["finish"],
            preemptions=outcome["preemptions"], busy_gpu_s=outcome["busy_gpu_s"],
            events=self._native.events, wall_s=self.wall_s,
            segments=self._native.segments() if self._record_segments else None,
        )


def simulate(workload: Workload, cluster: Cluster, config: Optional[SimConfig] = None, **options) -> SimResult:
    """Replays the whole workload and returns the result."""
    simulation = Simulation(workload, cluster, config, **options)
    simulation.run()
    return simulation.result()


def _native_config(config: SimConfig):
    return _native.SimConfig(
        policy=config.policy, placement=config.placement, backfill=config.backfill,
        restart_overhead_s=config.restart_overhead_s, lease_s=config.lease_s,
        queue_thresholds_gpu_s=list(config.queue_thresholds_gpu_s),
        starvation_factor=config.starvation_factor,
    )


def _column(values: Optional[np.ndarray], n: int) -> np.ndarray:
    return np.zeros(n) if values is None else np.asarray(values, dtype=np.float64)


def _durations_by_pool(workload: Workload, cluster: Cluster) -> np.ndarray:
    """Jobs x pools run times; inf where the workload has no time for a pool's GPU type."""
    durations = np.full((len(workload), len(cluster.pools)), np.inf)
    for column, pool in enumerate(cluster.pools):
        if pool.gpu_type in workload.gpu_types:
            durations[:, column] = workload.durations[:, workload.gpu_types.index(pool.gpu_type)]
    return durations


def _check_workload(workload: Workload) -> None:
    problems = (
        (workload.gpus <= 0, "needs a positive GPU count"),
        (~np.isfinite(workload.submit), "has no valid submit time"),
        (~(workload.durations > 0).all(axis=1), "has a duration that is not positive"),
        (~np.isfinite(workload.duration), "has no finite duration on any GPU type"),
    )
    for mask, problem in problems:
        if mask.any():
            raise WorkloadError(f"{workload.describe(int(np.argmax(mask)))} {problem}")


def _check_fits(workload: Workload, cluster: Cluster, durations: np.ndarray) -> None:
    capacity = np.array([pool.gpus for pool in cluster.pools])
    fits = (np.isfinite(durations) & (workload.gpus[:, None] <= capacity[None, :])).any(axis=1)
    if not fits.all():
        index = int(np.argmin(fits))
        usable = capacity[np.isfinite(durations[index])]
        raise UnschedulableJobError(
            f"{workload.describe(index)} needs {workload.gpus[index]} GPUs, but the largest GPU pool "
            f"it can run on has {usable.max() if len(usable) else 0}; it could never start")
