"""Runs a workload on a cluster under a configuration, in the native
event-driven core (csrc/sim)."""

from __future__ import annotations

import dataclasses
import re
import time
import zlib
from typing import Optional

import numpy as np

from itercast import _native
from itercast.sim.cluster import Cluster
from itercast.sim.config import DEADLINE_POLICIES, PER_SIMULATION_FIELDS, SimConfig
from itercast.sim.errors import SimConfigError, UnschedulableJobError, WorkloadError
from itercast.sim.estimates import duration_estimates
from itercast.sim.metrics import SimResult
from itercast.sim.workload import LIVE_COLUMNS, Workload



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
        self.estimates = duration_estimates(workload, self.config)
        _check_deadlines(self.config, workload)
        try:
            self._native = _native.Simulator(
                pools=[(pool.nodes, pool.gpus_per_node) for pool in cluster.pools],
                submit=workload.submit,
                gpus=workload.gpus.astype(np.int32),
                duration=durations,
                estimate=self.estimates,
                live=_live_columns(workload, cluster),
                config=_native_config(self.config),
                start_time=np.nan if start_time is None else float(start_time),
                record_segments=record_segments,
                deadline=np.empty(0) if workload.deadlines is None else workload.deadlines.astype(np.float64),
                preference=_type_preference(workload, cluster, self.config, durations),
            )
        except ValueError as error:
            raise _named_job_error(error, workload) from None
        self._record_segments = record_segments

    @property
    def now(self) -> float:
        return self._native.now

    @property
    def budget_exhausted(self) -> bool:
        """True once a run stopped at its ``max_events`` budget."""
        return self._native.budget_exhausted

    def run(self, until: Optional[float] = None, *, max_events: Optional[int] = None) -> bool:
        """Processes events up to ``until`` (default: the end); True when every
        job finished. With ``max_events`` it stops early, returning False and
        setting ``budget_exhausted``, once that many events were processed in
        all: a configuration that preempts at nearly every instant cannot stall
        its caller."""
        began = time.perf_counter()
        try:
            return self._native.run_until(np.inf if until is None else float(until), int(max_events or 0))
        finally:
            self.wall_s += time.perf_counter() - began

    def set_estimates(self, estimates: np.ndarray) -> None:
        """Replaces every job's duration estimate (e.g. an estimator refitted on
        the jobs finished so far); waiting jobs are re-ranked from now on."""
        estimates = np.asarray(estimates, dtype=np.float64)
        if estimates.shape != (len(self.workload),) or not (np.isfinite(estimates) & (estimates > 0)).all():
            raise SimConfigError(f"set_estimates needs {len(self.workload)} positive, finite estimates")
        self._native.set_estimates(estimates)
        self.estimates = estimates

    def snapshot(self, include_future: bool = False) -> Workload:
        """The unfinished jobs at the current instant as a workload that starts
        a simulation continuing this one: ``Simulation(snapshot, cluster,
        config, start_time=simulation.now)`` run to the end finishes every job
        when this simulation would. Jobs not yet submitted are left out unless
        ``include_future``. The snapshot carries every live-state column, the
        estimates in use (``estimates``), the running jobs' GPUs
        (``placement``) and each job's Tiresias queue, so a what-if simulation
        can start from the real cluster."""
        state = self._native.snapshot(include_future)
        snap = self.workload.subset(state["job"])
        slices = _placements(state, self.cluster)
        return dataclasses.replace(
            snap, estimates=self.estimates[state["job"]], placement=slices,
            tiresias_queue=state["tiresias_queue"],
            **{name: state[name] for name in LIVE_COLUMNS if name != "running"},
            running=state["running"].astype(bool))

    def set_config(self, config: SimConfig) -> None:
        """Switches policy settings from now on; estimates are fixed at construction."""
        changed = [name for name in PER_SIMULATION_FIELDS if getattr(config, name) != getattr(self.config, name)]
        if changed:
            raise SimConfigError(f"{', '.join(changed)} cannot change during a simulation")
        _check_deadlines(config, self.workload)
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


def _type_preference(workload: Workload, cluster: Cluster, config: SimConfig, durations: np.ndarray) -> np.ndarray:
    """Jobs x pools, the order each job tries GPU types in (empty: by its true run times)."""
    if config.gpu_type_choice == "fastest":
        return np.empty(0)
    if config.gpu_type_choice == "blind":  # an order per job that ignores speed, the same in any simulation
        return np.array([[zlib.crc32(f"{job}|{pool.gpu_type}".encode()) for pool in cluster.pools]
                         for job in workload.job_ids], dtype=np.float64).reshape(durations.shape)
    if workload.type_estimates is None:
        raise SimConfigError(f"gpu_type_choice=estimated, but {workload.source} has no per-type estimates "
                             "(type_estimates)")
    return _by_pool(workload.type_estimates, workload.gpu_types, cluster)


def _check_deadlines(config: SimConfig, workload: Workload) -> None:
    if config.policy in DEADLINE_POLICIES and workload.deadlines is None:
        raise SimConfigError(f"policy {config.policy} ranks jobs by deadline, and {workload.source} "
                             "gives none (a deadline column)")


def _native_config(config: SimConfig):
    return _native.SimConfig(
        policy=config.policy, placement=config.placement, backfill=config.backfill,
        restart_overhead_s=config.restart_overhead_s, lease_s=config.lease_s,
        queue_thresholds_gpu_s=list(config.queue_thresholds_gpu_s),
        starvation_factor=config.starvation_factor,
    )


def _named_job_error(error: ValueError, workload: Workload) -> ValueError:
    """The core names a job by its row; the user knows it by id and line."""
    found = re.match(r"running job (\d+) (.*)", str(error))
    if not found:
        return error
    return WorkloadError(f"running {workload.describe(int(found.group(1)))} {found.group(2)}")


def _live_columns(workload: Workload, cluster: Cluster) -> dict:
    """The workload's live-state columns as the native core reads them."""
    live = {name: np.asarray(getattr(workload, name), dtype=np.float64)
            for name in LIVE_COLUMNS if getattr(workload, name) is not None}
    if "running" in live:
        live["running"] = live["running"].astype(np.uint8)
    if workload.placement is not None:
        live.update(_slice_columns(workload, cluster))
    return live


def _slice_columns(workload: Workload, cluster: Cluster) -> dict:
    types = [pool.gpu_type for pool in cluster.pools]
    offset, pool, node, gpus = [0], [], [], []
    for index, slices in enumerate(workload.placement):
        for gpu_type, slice_node, slice_gpus in slices or ():
            if gpu_type not in types:
                raise WorkloadError(f"{workload.describe(index)} is placed on GPU type {gpu_type!r}, "
                                    f"which the cluster lacks")
            pool.append(types.index(gpu_type))
            node.append(slice_node)
            gpus.append(slice_gpus)
        offset.append(len(node))
    return {"slice_offset": np.array(offset), "slice_pool": np.array(pool), "slice_node": np.array(node),
            "slice_gpus": np.array(gpus)}


def _placements(state: dict, cluster: Cluster) -> np.ndarray:
    """Per snapshot job, its GPUs as ((gpu_type, node, gpus), ...); () when not running."""
    offset = state["slice_offset"]
    placement = np.empty(len(state["job"]), dtype=object)
    for row in range(len(placement)):
        lo, hi = offset[row], offset[row + 1]
        placement[row] = tuple((cluster.pools[pool].gpu_type, int(node), int(gpus)) for pool, node, gpus in
                               zip(state["slice_pool"][lo:hi], state["slice_node"][lo:hi],
                                   state["slice_gpus"][lo:hi]))
    return placement


def _durations_by_pool(workload: Workload, cluster: Cluster) -> np.ndarray:
    """Jobs x pools run times; inf where the workload has no time for a pool's GPU type."""
    return _by_pool(workload.durations, workload.gpu_types, cluster)


def _by_pool(per_type: np.ndarray, gpu_types: tuple[str, ...], cluster: Cluster) -> np.ndarray:
    """A jobs x GPU-types column as jobs x pools; inf where a pool's GPU type has no figure."""
    by_pool = np.full((len(per_type), len(cluster.pools)), np.inf)
    for column, pool in enumerate(cluster.pools):
        if pool.gpu_type in gpu_types:
            by_pool[:, column] = per_type[:, gpu_types.index(pool.gpu_type)]
    return by_pool


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
