"""Replays a trace on a simulated cluster the way a live scheduler meets it:
hour by hour, re-fitting the duration estimator on the jobs finished so far
and, with a tuner, re-configuring the cluster.

Duration-aware policies never see true durations: each job is ranked by the
workload's supplied ``estimated_duration`` (e.g. from the iteration-time
predictor) when every job has one, else by a ``DurationEstimator`` refitted
at every interval on the finished jobs of the history window.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from itercast.sched.estimator import DurationEstimator
from itercast.sched.tuner import History, Retune
from itercast.sim.cluster import Cluster
from itercast.sim.config import PER_SIMULATION_FIELDS, SimConfig
from itercast.sim.engine import Simulation
from itercast.sim.metrics import SimResult
from itercast.sim.workload import Workload

DEFAULT_CONFIG = SimConfig(policy="tiresias", queues=2, queue_limits_gpu_s=(3600.0,))


@dataclass
class ReplayResult:
    result: SimResult
    timeline: list = field(default_factory=list)  # (time_s, SimConfig) from the start and at each switch
    retunes: list = field(default_factory=list)   # Retune records
    measured: Optional[np.ndarray] = None         # jobs the metrics count (None: all)
    snapshot: Optional[Workload] = None           # the unfinished jobs when a replay stopped early (``until``)

    @property
    def switches(self) -> int:
        return sum(retune.switched for retune in self.retunes)

    @property
    def tuning_wall_s(self) -> float:
        return sum(retune.wall_s for retune in self.retunes)

    def summary(self) -> dict:
        """``itercast sim --json``'s metrics over the measured jobs, plus the tuning record."""
        result = self.result
        if self.measured is not None:
            result = dataclasses.replace(
                result, workload=result.workload.subset(self.measured), first_start=result.first_start[self.measured],
                finish=result.finish[self.measured], preemptions=result.preemptions[self.measured],
                busy_gpu_s=result.busy_gpu_s[self.measured], segments=None)
        summary = result.summary()
        tuned = [retune for retune in self.retunes if retune.simulations]
        summary.update(
            retunes=len(tuned), switches=self.switches, tuning_wall_s=self.tuning_wall_s,
            max_retune_wall_s=max((retune.wall_s for retune in tuned), default=0.0),
            timeline=[{"time_s": moment, "config": config_dict(config)} for moment, config in self.timeline])
        return summary


def config_dict(config: SimConfig) -> dict:
    """The scheduling knobs of a configuration (the per-simulation fields are the replay's, not the tuner's)."""
    fields = dataclasses.asdict(config)
    for name in PER_SIMULATION_FIELDS:
        fields.pop(name)
    fields["queue_limits_gpu_s"] = list(config.queue_thresholds_gpu_s)
    return fields


def replay(workload: Workload, cluster: Cluster, config: SimConfig = DEFAULT_CONFIG, *, tuner=None,
           interval_s: float = 3600.0, history_s: float = 86400.0, tune_from: Optional[float] = None,
           measure_from: Optional[float] = None, until: Optional[float] = None,
           progress: Optional[Callable[[float, float], None]] = None) -> ReplayResult:
    """Runs ``workload`` from its first submission to its last finish under
    ``config``; every ``interval_s`` the estimator is refitted and, from
    ``tune_from`` on, ``tuner.retune`` may switch the configuration. Metrics
    count the jobs submitted at or after ``measure_from`` (a warm-up before
    it fills the cluster and the history). With ``until`` the replay stops
    then, its unfinished jobs in ``snapshot``. ``progress(now, last_submit)``
    is called after every interval."""
    supplied = workload.estimates is not None and bool(np.isfinite(workload.estimates).all())
    estimator = None if supplied else DurationEstimator(history_s)
    initial = workload.estimates if supplied else estimator.predict(workload.gpus, workload.virtual_cluster)
    simulation = Simulation(dataclasses.replace(workload, estimates=initial), cluster,
                            dataclasses.replace(config, estimate="supplied"))
    outcome = ReplayResult(result=None, timeline=[(simulation.now, simulation.config)])
    last_submit = float(workload.submit.max())
    now = simulation.now
    estimates = initial
    submitted_estimates = np.full(len(workload), np.nan)
    while not simulation.run(until=now + interval_s if until is None else min(now + interval_s, until)):
        now = simulation.now
        if until is not None and now >= until:
            break
        finish = simulation.result().finish
        arrived = np.isnan(submitted_estimates) & (workload.submit < now)
        submitted_estimates[arrived] = estimates[arrived]
        if estimator is not None:
            estimator.fit(workload, finish, now)
            estimates = estimator.predict(workload.gpus, workload.virtual_cluster)
            simulation.set_estimates(estimates)
        if tuner is not None and (tune_from is None or now >= tune_from):
            # A copy: the record goes on filling after this re-tune, and a tuner may keep its History.
            history = History(workload, finish, estimator, submitted_estimates.copy())
            retune: Retune = tuner.retune(simulation, history)
            outcome.retunes.append(retune)
            if retune.switched:
                simulation.set_config(retune.chosen)
                outcome.timeline.append((now, retune.chosen))
        if progress is not None:
            progress(now, last_submit)
    outcome.result = simulation.result()
    if until is not None:
        outcome.snapshot = simulation.snapshot()
    if measure_from is not None:
        outcome.measured = workload.submit >= measure_from
    return outcome
