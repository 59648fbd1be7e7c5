"""What-if simulations: the live cluster plus a future, under a candidate
configuration, scored by the jobs' mean time in the system over the
look-ahead.

The score of a what-if from ``now`` to ``end`` is the mean over its jobs of
min(finish, end) - max(submit, now): the area under the number of jobs in
the system divided by their count, which by Little's law is what average JCT
follows. Simulating only to ``end`` keeps a re-tune's cost bounded however
long the backlog is.

A what-if never sees what a real scheduler would not know. The jobs in the
cluster keep their real state (service, queue, GPUs, the work they have done),
but their total durations are drawn from the forecaster's duration model
conditioned on the work already done, or read from supplied estimates; the
jobs to come are sampled futures. ``true_whatif`` builds the clairvoyant
version (real durations, the real jobs to come) for the upper-bound tuner.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.engine import Simulation
from itercast.sim.metrics import long_jobs_slowdown
from itercast.sim.workload import Workload

# Events a what-if may process per job before it counts as thrashing (the
# full Philly replay on an overloaded cluster takes about 17 per job under LAS).
EVENTS_PER_JOB = 50
MIN_EVENT_BUDGET = 2_000
# What a what-if's score is: the jobs' mean time in the system, its 99th
# percentile, or the share of the jobs with a deadline that miss it.
OBJECTIVE_SCORES = ("avg-jct", "p99-jct", "deadline-misses")


@dataclass(frozen=True)
class FutureOutcome:
    """One future under one configuration: its score, and the tail the
    guard compares: p99 JCT (from each job's submission) and the mean
    slowdown of the longest-running tenth of the jobs."""

    score: float
    p99_jct_s: float
    long_jobs_slowdown: float


@dataclass(frozen=True)
class WhatIf:
    """The futures one re-tune scores every candidate on (same for all)."""

    futures: tuple[Workload, ...]
    cluster: Cluster
    start: float
    end: float
    drain: bool = False
    measure_from: float = -np.inf  # jobs submitted earlier only load the cluster (a warm-up)
    objective: str = "avg-jct"     # one of OBJECTIVE_SCORES

    def score(self, config: SimConfig) -> float:
        """Mean over the futures of the objective (by default the jobs' mean
        time in the system until ``end``); inf when a future thrashes."""
        return float(np.mean(self.per_future(config)))

    def per_future(self, config: SimConfig) -> np.ndarray:
        return np.array([outcome.score for outcome in self.outcomes(config)])

    def outcomes(self, config: SimConfig) -> list[FutureOutcome]:
        end = np.inf if self.drain else self.end
        return [future_outcome(future, self.cluster, config, self.start, end, self.measure_from, self.objective)
                for future in self.futures]

    @property
    def simulations_per_candidate(self) -> int:
        return len(self.futures)


def score_future(workload: Workload, cluster: Cluster, config: SimConfig, start: float, end: float,
                 measure_from: float = -np.inf, objective: str = "avg-jct") -> float:
    return future_outcome(workload, cluster, config, start, end, measure_from, objective).score


def future_outcome(workload: Workload, cluster: Cluster, config: SimConfig, start: float, end: float,
                   measure_from: float = -np.inf, objective: str = "avg-jct") -> FutureOutcome:
    if not (workload.submit >= measure_from).any():
        return FutureOutcome(0.0, 0.0, 0.0)
    return outcome_of(future_finish(workload, cluster, config, start, end), workload, start, end, measure_from,
                      objective)


def outcome_of(finish: np.ndarray | None, workload: Workload, start: float, end: float,
               measure_from: float = -np.inf, objective: str = "avg-jct") -> FutureOutcome:
    """A future's outcome from its jobs' finish times (None: it thrashed)."""
    measured = workload.submit >= measure_from
    if finish is None:
        return FutureOutcome(float("inf"), float("inf"), float("inf"))
    finish = np.where(np.isnan(finish), end, np.minimum(finish, end))[measured]
    jobs = workload.subset(measured)
    in_system = np.maximum(finish - np.maximum(jobs.submit, start), 0.0)
    jct = finish - jobs.submit
    return FutureOutcome(_objective_score(objective, in_system, finish, jobs), float(np.percentile(jct, 99)),
                         long_jobs_slowdown(jct, jobs.duration))


def _objective_score(objective: str, in_system: np.ndarray, finish: np.ndarray, jobs: Workload) -> float:
    if objective == "avg-jct":
        return float(np.mean(in_system))
    if objective == "p99-jct":
        return float(np.percentile(in_system, 99))
    if objective == "deadline-misses":
        with_deadline = ~np.isnan(jobs.deadlines) if jobs.deadlines is not None else np.zeros(len(jobs), bool)
        late = finish[with_deadline] > jobs.deadlines[with_deadline]
        return float(np.mean(late)) if len(late) else 0.0
    raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVE_SCORES)}")


def future_finish(workload: Workload, cluster: Cluster, config: SimConfig, start: float,
                  end: float = np.inf) -> np.ndarray | None:
    """Each job's finish time in a what-if run from ``start`` until ``end``
    (NaN: not finished by then), or None when the simulation thrashed."""
    simulation = Simulation(workload, cluster, dataclasses.replace(config, estimate="supplied"), start_time=start)
    simulation.run(until=None if np.isinf(end) else end,
                   max_events=max(MIN_EVENT_BUDGET, EVENTS_PER_JOB * len(workload)))
    if simulation.budget_exhausted:
        return None
    return simulation.result().finish


def resampled_live(live: Workload, total_s: np.ndarray) -> Workload:
    """The live jobs with new total durations (seconds on the fastest GPU
    type, > the work done), keeping the work each has done and the speed
    ratios between GPU types."""
    done_s = work_done_s(live)
    durations, total_s = rescaled(live.durations, total_s, done_s)
    return dataclasses.replace(live, durations=durations, remaining_s=total_s - done_s,
                               done_fraction=done_s / total_s)


def rescaled(durations: np.ndarray, total_s: np.ndarray, done_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-type durations (jobs x GPU types) rescaled so that each job takes
    ``total_s`` on its fastest type, at least just over the ``done_s`` it has
    done, keeping the speed ratios between types; and the totals used."""
    total_s = np.maximum(total_s, done_s + 1e-6)
    return durations * (total_s / durations.min(axis=1))[:, None], total_s


def work_done_s(live: Workload) -> np.ndarray:
    """Seconds of work each live job has done (what a scheduler can observe)."""
    return live.durations.min(axis=1) - live.remaining_s


def sampled_whatif(live: Workload, forecaster, cluster: Cluster, start: float, horizon_s: float,
                   futures: int, rng: np.random.Generator, estimate_jobs, supplied: bool,
                   drain: bool = False, deadline_slack: np.ndarray | None = None) -> WhatIf:
    """``futures`` what-ifs: the live jobs with durations drawn anew (or,
    when ``supplied``, their supplied estimates), then jobs sampled for the
    next ``horizon_s``. ``estimate_jobs(workload)`` gives the estimates the
    sampled jobs are ranked by; with ``deadline_slack`` (ratios of the time
    given to the run time) each sampled job gets a deadline drawn from it."""
    parts = []
    for _ in range(futures):
        if supplied:
            total = live.estimates
        else:
            total = forecaster.sample_durations(live.gpus, live.virtual_cluster, work_done_s(live), rng)
        coming = _on_types(forecaster.sample(horizon_s, rng), live.gpu_types)
        coming = dataclasses.replace(coming, estimates=estimate_jobs(coming))
        if deadline_slack is not None:
            coming = _with_deadlines(coming, deadline_slack, rng)
        parts.append(Workload.concat([resampled_live(live, total), coming]))
    return WhatIf(tuple(parts), cluster, start, start + horizon_s, drain)


def _with_deadlines(coming: Workload, slack: np.ndarray, rng: np.random.Generator) -> Workload:
    if not len(slack) or not len(coming):
        return dataclasses.replace(coming, deadlines=np.full(len(coming), np.nan))
    return dataclasses.replace(coming, deadlines=coming.submit + rng.choice(slack, len(coming)) * coming.duration)


def true_whatif(live: Workload, workload: Workload, cluster: Cluster, start: float, horizon_s: float,
                estimate_jobs, drain: bool = False) -> WhatIf:
    """The clairvoyant what-if: real durations and the real jobs of the next
    horizon (an upper bound for any forecaster). Jobs are still ranked by the
    estimates the cluster really uses, or it would favour policies whose
    real-life estimates are worse than in the what-if."""
    coming = workload.window(start=np.nextafter(start, np.inf), end=start + horizon_s)
    coming = dataclasses.replace(coming, estimates=estimate_jobs(coming))
    return WhatIf((Workload.concat([live, coming]),), cluster, start, start + horizon_s, drain)


def _on_types(coming: Workload, gpu_types: Sequence[str]) -> Workload:
    """Sampled jobs run equally fast on every GPU type of the live cluster
    (the forecaster models one duration per job)."""
    if tuple(coming.gpu_types) == tuple(gpu_types):
        return coming
    durations = np.repeat(coming.durations.min(axis=1, initial=np.inf)[:, None], len(gpu_types), axis=1)
    return dataclasses.replace(coming, durations=durations, gpu_types=tuple(gpu_types))
