"""What an operator should run next: one re-tune of AutoSched from a real
cluster's log, reported as a recommendation instead of applied.

At ``now`` (default: the end of the log) the forecaster and the duration
estimator learn from the jobs finished by then, the jobs running or queued
then are the live state, and a search over the configuration space scores
candidates on sampled futures, as every hourly re-tune does. The best few
and the configuration in force are then simulated again on fresh futures,
to completion, and compared per future by the objective and by average and
p99 JCT: the change a switch should bring, and how much it varies with the
future drawn.

The live state comes from the log's own start and end times when it has them
(Slurm, PAI, Kubernetes: ``JobLog``); a replay trace without them (Philly,
Tiresias, Helios) is simulated under the configuration in force up to
``now``, from eight days before it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from itercast.sched.estimator import DurationEstimator
from itercast.sched.replay import DEFAULT_CONFIG, replay
from itercast.sched.space import SearchSpace
from itercast.sched.tuner import GUARDED, AutoSched, History, TunerSettings, within_tail_guard
from itercast.sched.whatif import FutureOutcome, WhatIf, future_finish, outcome_of
from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.errors import WorkloadError
from itercast.sim.joblog import JobLog
from itercast.sim.workload import Workload

WEEK_S = 7 * 86400.0
# A replay trace records no start times: its last REPLAY_S are simulated to rebuild the cluster's state (a
# week of finished jobs for the duration model, a day that fills the cluster first), and its last
# ARRIVALS_S give the forecaster's calendar the four weeks of submissions it looks back on.
REPLAY_S = 8 * 86400.0
ARRIVALS_S = 5 * WEEK_S


@dataclass(frozen=True)
class ClusterState:
    """What a scheduler knows at ``now``: the jobs submitted so far
    (``history``, durations known only for the finished ones) with their
    ``finish`` times (NaN: not finished), and the jobs running or queued then
    (``live``, with the live-state columns of docs/sim.md)."""

    now: float
    history: Workload
    finish: np.ndarray
    live: Workload


@dataclass(frozen=True)
class Outcome:
    """One configuration simulated to completion on each fresh future: the
    objective's score, average and p99 JCT, and their change against the
    configuration in force (ratios - 1), per future."""

    config: SimConfig
    search_score: float
    score: np.ndarray
    avg_jct_s: np.ndarray
    p99_jct_s: np.ndarray
    avg_change: np.ndarray
    p99_change: np.ndarray
    tail: tuple[FutureOutcome, ...]


@dataclass(frozen=True)
class Recommendation:
    now: float
    current: Outcome
    chosen: Outcome
    alternatives: tuple[Outcome, ...]
    running: int
    queued: int
    history_jobs: int
    margin: float
    wall_s: float
    note: str = ""

    @property
    def switch(self) -> bool:
        return self.chosen.config != self.current.config


def state_from_log(log: JobLog, now: float) -> ClusterState:
    """The cluster at ``now`` as the log records it; jobs cancelled before
    they started are left out (they never held a GPU)."""
    at = log.at(now)
    known = at.submitted & (at.finished | at.running | at.queued)
    ran = log.run_time(now)
    vc = log.virtual_cluster if np.any(log.virtual_cluster != "") else None
    history = Workload(job_ids=log.job_ids[known], submit=log.submit[known], gpus=log.gpus[known],
                       durations=np.where(at.finished, ran, np.nan)[known].reshape(-1, 1),
                       virtual_cluster=None if vc is None else vc[known], lines=log.lines[known], source=log.source)
    finish = np.where(at.finished, log.end, np.nan)[known]
    return ClusterState(float(now), history, finish, _live_from_log(log, at.running | at.queued, ran, at.running, vc))


def _live_from_log(log: JobLog, mask: np.ndarray, ran: np.ndarray, running: np.ndarray,
                   vc: Optional[np.ndarray]) -> Workload:
    """The running and queued jobs with the state the simulator continues
    from; their total durations are placeholders the what-ifs draw anew
    (work done: the seconds run so far, remaining 1 s)."""
    ran, running, start = np.nan_to_num(ran[mask]), running[mask], log.start[mask]
    gpus, submit = log.gpus[mask], log.submit[mask]
    attained = np.where(running, gpus * ran, 0.0)
    started_at = np.where(running, start, np.nan)
    return Workload(
        job_ids=log.job_ids[mask], submit=submit, gpus=gpus, durations=(ran + 1.0).reshape(-1, 1),
        virtual_cluster=None if vc is None else vc[mask], lines=log.lines[mask], source=log.source,
        running=running, remaining_s=np.ones(len(submit)), attained_gpu_s=attained,
        service_since_promotion_gpu_s=attained, held_since_promotion_s=np.where(running, ran, 0.0),
        first_start_s=started_at, work_start_s=started_at, last_start_s=started_at,
        queue_entry_s=np.where(running, start, submit), pending_since_s=np.where(running, np.nan, submit))


def state_from_trace(workload: Workload, cluster: Cluster, config: SimConfig, now: float,
                     history_s: float = 86400.0) -> ClusterState:
    """The cluster at ``now`` for a trace that records no start times: its
    last ``REPLAY_S`` replayed under ``config`` up to ``now`` (durations
    ranked by an estimator refitted hourly, as in a replay); older
    submissions count as arrivals only."""
    history = workload.window(start=now - ARRIVALS_S, end=now)
    replayed = history.submit >= now - REPLAY_S
    if not replayed.any():
        raise WorkloadError(f"no job submitted in the {REPLAY_S / 86400:.0f} days before the recommendation time",
                            workload.source)
    outcome = replay(history.subset(replayed), cluster, config, history_s=history_s, until=now)
    finish = np.full(len(history), np.nan)
    finish[replayed] = outcome.result.finish
    return ClusterState(float(now), history, finish, outcome.snapshot)


def recommend(state: ClusterState, cluster: Cluster, current: SimConfig = DEFAULT_CONFIG, *,
              settings: TunerSettings = TunerSettings(), space: SearchSpace = SearchSpace(), evaluator=None,
              alternatives: int = 3) -> Recommendation:
    """One re-tune from ``state``: the configuration to run for the next
    interval, with its expected change against ``current`` and the next best
    ``alternatives``. A switch is recommended only when a candidate beats
    ``current`` by ``settings.margin`` on the objective on average over fresh
    futures (and, under the guarded objective, keeps the tail within the
    guard): the best such one."""
    began = time.perf_counter()
    _check_fits(state, cluster)
    estimator = DurationEstimator(settings.history_s).fit(state.history, state.finish, state.now)
    history = History(state.history, state.finish, estimator)
    live = dataclasses.replace(state.live, estimates=history.estimate(state.live))
    current = dataclasses.replace(current, estimate="supplied")
    tuner = AutoSched(cluster, settings, space, evaluator)
    try:
        ranked, note = tuner.rank(live, history, state.now, current)
        fresh = tuner.fresh_whatif(live, history, state.now) if ranked else None
        past = tuner.reviewed_past(live, history, state.now) if ranked and settings.objective == GUARDED else None
    finally:
        tuner.close()
    counts = dict(running=int(np.sum(live.running)), queued=int(np.sum(~live.running)),
                  history_jobs=int(np.sum(np.isfinite(state.finish))), margin=settings.margin)
    if fresh is None:
        keep = _unscored(current)
        return Recommendation(state.now, keep, keep, (), wall_s=time.perf_counter() - began, note=note, **counts)
    candidates = [(config, score) for config, score in _distinct(ranked) if config != current][:alternatives + 1]
    current_score = next(score for config, score in ranked if config == current)
    keep = _outcome(fresh, current, current_score, None)
    scored = sorted((_outcome(fresh, config, score, keep) for config, score in candidates),
                    key=lambda outcome: float(np.mean(outcome.score)))
    within_guard = _tail_guard(settings, keep, past)
    chosen = next((outcome for outcome in scored if _beats(outcome, keep, settings) and within_guard(outcome)), keep)
    others = tuple(outcome for outcome in scored if outcome is not chosen)[:alternatives]
    return Recommendation(state.now, keep, chosen, others, wall_s=time.perf_counter() - began, **counts)


def _check_fits(state: ClusterState, cluster: Cluster) -> None:
    live = state.live
    in_use = int(live.gpus[live.running].sum()) if len(live) else 0
    if in_use > cluster.total_gpus:
        raise WorkloadError(f"{in_use} GPUs are in use at the recommendation time, more than the cluster's "
                            f"{cluster.total_gpus} (--gpus)", live.source)
    too_big = np.flatnonzero(live.gpus > cluster.total_gpus)
    if len(too_big):
        raise WorkloadError(f"{live.describe(int(too_big[0]))} asks for {live.gpus[too_big[0]]} GPUs, more than "
                            f"the cluster's {cluster.total_gpus} (--gpus)", live.source)


def _distinct(ranked: list[tuple[SimConfig, float]]) -> list[tuple[SimConfig, float]]:
    seen, kept = set(), []
    for config, score in ranked:
        if config not in seen and math.isfinite(score):
            seen.add(config)
            kept.append((config, score))
    return kept


def _beats(candidate: Outcome, current: Outcome, settings: TunerSettings) -> bool:
    """Beats the configuration in force by the margin on the objective, on average over the futures."""
    return bool(np.mean(candidate.score) < np.mean(current.score) * (1 - settings.margin))


def _tail_guard(settings: TunerSettings, current: Outcome,
                past: Optional[WhatIf]) -> Callable[[Outcome], bool]:
    """Under the guarded objective, whether a candidate keeps the tail within the guard of the configuration
    in force: over the log's reviewed past when it covers ``history_s`` (as the tuner guards), else over the
    fresh futures."""
    if settings.objective != GUARDED:
        return lambda outcome: True
    if past is None:
        return lambda outcome: within_tail_guard(outcome.tail, current.tail, settings.tail_guard)
    reference = past.outcomes(current.config)
    return lambda outcome: within_tail_guard(past.outcomes(outcome.config), reference, settings.tail_guard)


def _outcome(whatif: WhatIf, config: SimConfig, search_score: float, baseline: Optional[Outcome]) -> Outcome:
    """``config`` on every future of ``whatif``, run to completion; changes against ``baseline`` (itself if None)."""
    tails, avg, p99 = [], [], []
    for future in whatif.futures:
        finish = future_finish(future, whatif.cluster, config, whatif.start)
        tails.append(outcome_of(finish, future, whatif.start, np.inf, whatif.measure_from, whatif.objective))
        jct = np.full(len(future), np.inf) if finish is None else np.where(np.isnan(finish), np.inf,
                                                                           finish - future.submit)
        avg.append(np.mean(jct))
        p99.append(np.percentile(jct, 99, method="higher"))
    avg, p99 = np.array(avg), np.array(p99)
    base_avg, base_p99 = (avg, p99) if baseline is None else (baseline.avg_jct_s, baseline.p99_jct_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Outcome(config, search_score, np.array([tail.score for tail in tails]), avg, p99,
                       avg / base_avg - 1.0, p99 / base_p99 - 1.0, tuple(tails))


def _unscored(config: SimConfig) -> Outcome:
    nothing = np.zeros(0)
    return Outcome(config, math.nan, nothing, nothing, nothing, nothing, nothing, ())
