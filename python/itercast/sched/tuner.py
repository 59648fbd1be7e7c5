"""Tuners that re-configure a running cluster simulation.

``AutoSched`` can work on two time scales. With a ``review_budget`` (off by
default: it did worse on held-out weeks, docs/decisions.md), once a day it
reviews the last week (``review.past_whatif``): the simplest configuration
close to the lowest average JCT its jobs could have had becomes the *home*
configuration when it beats the current home by ``margin`` (without a
review, home is the incumbent). Every interval it forecasts the coming
workload from the history, builds what-ifs from the live cluster
(``Simulation.snapshot``) plus sampled futures, searches the configuration
space with Optuna's TPE under a fixed budget of simulations, and leaves home
only for a candidate that beats it by ``margin`` on the same futures and
again on fresh ones and that the week would not have regretted; a detour
stays while it keeps any lead, then the cluster returns home. With
``clairvoyant=True`` it is given the real durations and the real jobs to
come instead: an upper bound, not a scheduler. Under the guarded objective
a candidate is adopted only when its tail over the reviewed week stays
within the guard of the configuration the tuner started from.

``PrototypeTuner`` is the method of AutoSched's published prototype: replay
the jobs finished in the last day into an empty cluster and grid-search the
Tiresias queue count with limits at equal-mass percentiles of their
GPU-seconds.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from itercast.errors import ItercastError
from itercast.sched.evaluators import ProcessEvaluator
from itercast.sched.forecast import DURATION_MODELS, WorkloadForecaster
from itercast.sched.review import past_whatif
from itercast.sched.space import MAX_QUEUES, SearchSpace
from itercast.sched.streams import stream, stream_seed
from itercast.sched.whatif import FutureOutcome, WhatIf, sampled_whatif, true_whatif, work_done_s
from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.engine import Simulation
from itercast.sim.errors import SimConfigError
from itercast.sim.workload import Workload

HOUR_S = 3600.0
DAY_S = 86400.0
# Penalty factor over the incumbent's score told to the search for a
# candidate whose what-ifs thrashed (an infinite value would stall TPE).
THRASH_PENALTY = 10.0
GUARDED = "avg-jct-guarded"
OBJECTIVES = ("avg-jct", GUARDED, "p99-jct", "deadline-misses")


@dataclass(frozen=True)
class TunerSettings:
    """``interval_s`` between re-tunes; ``history_s`` the forecaster's and
    estimator's window; ``duration_history_s`` the finished jobs the
    forecaster draws durations from (see ``WorkloadForecaster``);
    ``horizon_s`` how far ahead futures are sampled and simulated;
    ``budget`` simulations per re-tune (``futures`` per candidate, the
    incumbent's included); ``search_batch`` the candidates the search
    proposes at once, before it hears their scores (at most this many are
    simulated in parallel; a setting of its own so that the search, and so
    the result, does not depend on how many workers score them);
    ``margin`` the relative gain a switch needs;
    every ``review_interval_s`` the last ``review_s`` of jobs (after
    ``review_warmup_s`` that only loads the cluster) are replayed in
    ``futures`` draws of the unfinished jobs' durations, ``review_budget``
    simulations in all (0: no review). ``objective``: what a re-tune
    minimises over its what-ifs (``OBJECTIVES``: the jobs' average time in
    the system; that average with a tail guard, under which a candidate whose
    p99 JCT or long-job slowdown over the reviewed past (the last
    ``review_s`` of jobs replayed; the what-ifs before the trace covers
    ``history_s``) exceeds the starting configuration's by more than
    ``tail_guard`` is not adopted; the p99; or the share of deadlines
    missed). ``duration_model``: how the forecaster learns durations, from
    the finished jobs only (``empirical``) or from them and the running
    ones, censored (``survival``: Kaplan-Meier, docs/forecast.md)."""

    interval_s: float = HOUR_S
    history_s: float = DAY_S
    duration_history_s: float = 7 * DAY_S
    horizon_s: float = 12 * HOUR_S
    budget: int = 48
    futures: int = 3
    search_batch: int = 4
    margin: float = 0.05
    seed: int = 0
    drain: bool = True
    review_s: float = 7 * DAY_S
    review_interval_s: float = DAY_S
    review_warmup_s: float = DAY_S
    review_budget: int = 0
    # Unguarded by default: the what-if guard did not hold the week's p99 on Philly where the unguarded tuner
    # raised it, and cost average JCT on Sia (docs/decisions.md).
    objective: str = "avg-jct"
    tail_guard: float = 0.10
    duration_model: str = "empirical"

    def __post_init__(self):
        for name in ("interval_s", "history_s", "duration_history_s", "horizon_s", "review_s",
                     "review_interval_s", "review_warmup_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise SimConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.futures < 1:
            raise SimConfigError(f"futures must be at least 1, got {self.futures}")
        if self.search_batch < 1:
            raise SimConfigError(f"search_batch must be at least 1, got {self.search_batch}")
        if self.budget < 4 * self.futures:
            raise SimConfigError(f"budget ({self.budget}) must allow the incumbent, one candidate and their "
                                 f"validation: at least 4 x futures = {4 * self.futures} simulations")
        if not 0 <= self.margin < 1:
            raise SimConfigError(f"margin must be in [0, 1), got {self.margin!r}")
        if self.objective not in OBJECTIVES:
            raise SimConfigError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        if self.duration_model not in DURATION_MODELS:
            raise SimConfigError(f"duration_model must be one of {', '.join(DURATION_MODELS)}, "
                                 f"got {self.duration_model!r}")
        if not 0 <= self.tail_guard < 1:
            raise SimConfigError(f"tail_guard must be in [0, 1), got {self.tail_guard!r}")
        if self.review_budget != 0 and self.review_budget < 2 * self.futures:
            raise SimConfigError(f"review_budget must be 0 (no review) or allow home and one candidate on "
                                 f"every draw of the past: at least 2 x futures = {2 * self.futures}, "
                                 f"got {self.review_budget}")

    @property
    def score_objective(self) -> str:
        """What the what-ifs score: the guarded objective scores the average and guards at adoption."""
        return "avg-jct" if self.objective == GUARDED else self.objective

    @property
    def candidates(self) -> int:
        """Candidates besides the incumbent that one re-tune can afford, after
        the incumbent's score and the validation of a winner on fresh futures."""
        return self.budget // self.futures - 3


@dataclass(frozen=True)
class Retune:
    """What one re-tune saw and decided."""

    time_s: float
    incumbent: SimConfig
    chosen: SimConfig
    incumbent_score: float
    best_score: float
    simulations: int
    wall_s: float
    note: str = ""
    home: Optional[SimConfig] = None  # the configuration the last review stands for (None before one)

    @property
    def switched(self) -> bool:
        return self.chosen != self.incumbent


@dataclass
class History:
    """What the cluster knows at a re-tune: every job of the trace (only those
    submitted before now are looked at), their finish times so far (NaN when
    unfinished), the estimator in use (None with supplied estimates) and the
    estimate each submitted job was ranked by when it arrived (NaN: not
    recorded)."""

    workload: Workload
    finish: np.ndarray
    estimator: Optional[object] = None
    submitted_estimates: Optional[np.ndarray] = None

    def estimate(self, jobs: Workload) -> np.ndarray:
        if self.estimator is None:  # supplied estimates: the real jobs' own, sampled jobs' durations
            return jobs.estimates if jobs.estimates is not None else jobs.duration
        return self.estimator.predict(jobs.gpus, jobs.virtual_cluster)

    def estimate_as_submitted(self, mask: np.ndarray) -> np.ndarray:
        """The estimates the jobs of ``mask`` had when they arrived, where
        recorded; today's estimator would have learned from their own
        durations and flatter duration-aware policies in a review."""
        jobs = self.workload.subset(mask)
        estimates = self.estimate(jobs)
        if self.submitted_estimates is not None:
            recorded = self.submitted_estimates[mask]
            estimates = np.where(np.isfinite(recorded), recorded, estimates)
        return estimates


@dataclass
class AutoSched:
    cluster: Cluster
    settings: TunerSettings = field(default_factory=TunerSettings)
    space: SearchSpace = field(default_factory=SearchSpace)
    evaluator: object = None
    clairvoyant: bool = False
    name: str = "autosched"

    def __post_init__(self):
        self.evaluator = self.evaluator or ProcessEvaluator()
        self.forecaster = WorkloadForecaster(self.settings.history_s,
                                             duration_history_s=self.settings.duration_history_s,
                                             duration_model=self.settings.duration_model)
        self._rng = stream(self.settings.seed, "futures")
        self._searches = 0
        self._last_best: Optional[SimConfig] = None
        self.home: Optional[SimConfig] = None
        self.baseline: Optional[SimConfig] = None  # what the cluster ran before the first re-tune: the guard's reference
        self._next_review = -math.inf
        self._past: Optional[WhatIf] = None  # the last review's what-if and home's score on it
        self._home_past_score = math.inf
        # The guarded objective's reviewed past and the starting configuration's outcomes on it.
        self._guard_past: Optional[tuple[WhatIf, list[FutureOutcome]]] = None

    def retune(self, simulation: Simulation, history: History) -> Retune:
        began = time.perf_counter()
        now, incumbent = simulation.now, simulation.config
        self.baseline = self.baseline or incumbent
        live = simulation.snapshot()
        whatif, note = self._whatif(live, history, now)
        if whatif is None:
            return Retune(now, incumbent, incumbent, math.nan, math.nan, 0, time.perf_counter() - began, note,
                          self.home)
        simulations = self._review(live, history, now, incumbent)
        home = self.home if self.home is not None else incumbent
        with self.evaluator.session(whatif) as score:
            known = [incumbent] if home == incumbent else [incumbent, home]
            incumbent_score, *home_score = score(known)
            home_score = home_score[0] if home_score else incumbent_score
            start, start_score = min(zip(known, (incumbent_score, home_score)), key=lambda pair: pair[1])
            best, best_score, candidates = self._search(score, incumbent, start, start_score,
                                                        self.settings.candidates - (len(known) - 1),
                                                        self._seeds(incumbent, home))
        self._last_best = best
        simulations += (len(known) + candidates) * whatif.simulations_per_candidate
        # Leaving home takes the margin; a detour stays until it has no lead left.
        reference, reference_score = home, home_score
        if incumbent != home and incumbent_score < home_score:
            reference, reference_score = incumbent, incumbent_score
        chosen = reference
        if best != reference and self._beats(best_score, reference_score):
            plausible, reviewed = self._plausible(best)
            simulations += reviewed
            if plausible:
                chosen, validated = self._validate(best, reference, live, history, now)
                simulations += validated
        return Retune(now, incumbent, chosen, incumbent_score, best_score, simulations,
                      time.perf_counter() - began, note, self.home)

    def rank(self, live: Workload, history: History, now: float,
             incumbent: SimConfig) -> tuple[list[tuple[SimConfig, float]], str]:
        """Every configuration one search scores from this cluster state on
        sampled futures, best first, the incumbent among them: what a re-tune
        chooses from, for a caller that reports more than the choice. Empty,
        with the reason, when no job finished in the history window."""
        whatif, note = self._whatif(live, history, now)
        if whatif is None:
            return [], note
        scored: list[tuple[SimConfig, float]] = []
        with self.evaluator.session(whatif) as score:
            incumbent_score = score([incumbent])[0]
            self._search(score, incumbent, incumbent, incumbent_score, self.settings.candidates,
                         self._seeds(incumbent, incumbent), scored)
        return sorted([(incumbent, incumbent_score)] + scored, key=lambda pair: pair[1]), ""

    def reviewed_past(self, live: Workload, history: History, now: float) -> Optional[WhatIf]:
        """The last ``review_s`` of jobs replayed as the review and the tail
        guard replay them (None while the trace covers less than
        ``history_s``); durations of unfinished jobs are drawn from the
        forecaster as last fitted."""
        settings = self.settings
        past = past_whatif(history, live, now, self.cluster, review_s=settings.review_s,
                           warmup_s=settings.review_warmup_s, min_review_s=settings.history_s,
                           draws=1 if self.clairvoyant else settings.futures,
                           draw_durations=self._draw_durations())
        return None if past is None else dataclasses.replace(past, objective=settings.score_objective)

    def fresh_whatif(self, live: Workload, history: History, now: float) -> Optional[WhatIf]:
        """New sampled futures from the same cluster state (None without history)."""
        return self._whatif(live, history, now)[0]

    def _beats(self, score: float, incumbent_score: float) -> bool:
        return score < incumbent_score * (1 - self.settings.margin)

    def _validate(self, best: SimConfig, incumbent: SimConfig, live: Workload, history: History,
                  now: float) -> tuple[SimConfig, int]:
        """The best of many candidates on a few sampled futures is partly
        lucky (the winner's curse): it is adopted only if, on fresh futures,
        it beats the incumbent by the margin on average and is no worse on
        any one of them; under the guarded objective its tail must also stay
        there within the guard of the configuration the tuner started from.
        The clairvoyant tuner's single future is the truth: it looks again
        only to check the tail."""
        guarded = self.settings.objective == GUARDED
        if self.clairvoyant and not guarded:
            return best, 0
        fresh, _ = self._whatif(live, history, now)
        best_outcomes, incumbent_outcomes = fresh.outcomes(best), fresh.outcomes(incumbent)
        best_scores = np.array([outcome.score for outcome in best_outcomes])
        incumbent_scores = np.array([outcome.score for outcome in incumbent_outcomes])
        adopted = self.clairvoyant or (self._beats(best_scores.mean(), incumbent_scores.mean()) and bool(
            (best_scores <= incumbent_scores).all()))
        simulations = 2 * fresh.simulations_per_candidate
        if guarded and adopted:
            adopted, guarded_simulations = self._within_guard(best, best_outcomes, incumbent, incumbent_outcomes,
                                                              fresh)
            simulations += guarded_simulations
        return (best if adopted else incumbent), simulations

    def _within_guard(self, config: SimConfig, outcomes: list[FutureOutcome], incumbent: SimConfig,
                      incumbent_outcomes: list[FutureOutcome], fresh: WhatIf) -> tuple[bool, int]:
        """Whether ``config``'s tail stays within the guard of the configuration
        the tuner started from: over the reviewed past when the trace has one
        (a week's p99 is set by jobs that wait for days, which the next hours'
        what-ifs do not see), else over the fresh what-ifs. Against the start,
        not the configuration in force: switches each within the guard of the
        last compounded on Philly's 128-GPU week 5 to a p99 1.34x the start's.
        Returns the verdict and the simulations spent."""
        guard = self.settings.tail_guard
        if self._guard_past is not None:
            past, baseline_outcomes = self._guard_past
            return within_tail_guard(past.outcomes(config), baseline_outcomes, guard), len(past.futures)
        if self.baseline == incumbent:
            return within_tail_guard(outcomes, incumbent_outcomes, guard), 0
        return (within_tail_guard(outcomes, fresh.outcomes(self.baseline), guard),
                fresh.simulations_per_candidate)

    def _review(self, live: Workload, history: History, now: float, incumbent: SimConfig) -> int:
        """Once every ``review_interval_s``, the reviewed past replayed: under
        the guarded objective, the tail of the configuration the tuner started
        from on it (what ``_within_guard`` compares candidates with); with a
        ``review_budget``, the configuration that would have served the last
        ``review_s`` of jobs best (the simplest near it) becomes home when it
        beats the current home (the incumbent before the first review) by the
        margin. Returns the simulations spent."""
        settings = self.settings
        guarded = settings.objective == GUARDED
        if (settings.review_budget == 0 and not guarded) or now < self._next_review:
            return 0
        past = self.reviewed_past(live, history, now)
        if past is None:
            return 0
        self._next_review = now + settings.review_interval_s
        simulations = 0
        if guarded:
            self._guard_past = (past, past.outcomes(self.baseline))
            simulations += len(past.futures)
        if settings.review_budget == 0:
            return simulations
        home = self.home if self.home is not None else incumbent
        scored = []
        with self.evaluator.session(past) as score:
            home_score = score([home])[0]
            _, best_score, candidates = self._search(score, incumbent, home, home_score,
                                                     settings.review_budget // len(past.futures) - 1,
                                                     self._seeds(incumbent, home), scored)
        # Among the configurations within half the margin of the best, the one with
        # the fewest knobs: a week is one sample, and extra knobs fit its accidents.
        near = sorted([(config, value) for config, value in [(home, home_score)] + scored
                       if value <= best_score * (1 + settings.margin / 2)],
                      key=lambda pair: (len(self.space.params_of(pair[0])), pair[1]))
        pick, pick_score, guarded_simulations = self._first_within_guard(near)
        self.home, self._home_past_score = (pick, pick_score) if pick is not None and self._beats(
            pick_score, home_score) else (home, home_score)
        self._past = past
        return simulations + (1 + candidates) * len(past.futures) + guarded_simulations

    def _first_within_guard(self, ranked: list[tuple[SimConfig, float]]) -> tuple[Optional[SimConfig], float, int]:
        """The first of ``ranked`` whose tail on the reviewed past stays within
        the guard of the configuration the tuner started from (the first of
        all unless the objective is guarded); (None, inf) when none does.
        Returns it, its score and the simulations spent."""
        if self.settings.objective != GUARDED:
            return (*ranked[0], 0) if ranked else (None, math.inf, 0)
        past, baseline_outcomes = self._guard_past
        simulations = 0
        for config, value in ranked:
            simulations += len(past.futures)
            if within_tail_guard(past.outcomes(config), baseline_outcomes, self.settings.tail_guard):
                return config, value, simulations
        return None, math.inf, simulations

    def _plausible(self, config: SimConfig) -> tuple[bool, int]:
        """A detour must not have been worse than home over the reviewed week
        by more than the margin: what wins the next hours by starving jobs
        that a week would have seen through (e.g. SRTF on rough estimates)
        loses the week. Returns the verdict and the simulations spent."""
        if self._past is None:
            return True, 0
        verdict = self._past.score(config) <= self._home_past_score * (1 + self.settings.margin)
        return verdict, len(self._past.futures)

    def _draw_durations(self):
        if self.clairvoyant:
            return None
        return lambda jobs, done_s: self.forecaster.sample_durations(jobs.gpus, jobs.virtual_cluster, done_s,
                                                                     self._rng)

    def _whatif(self, live: Workload, history: History, now: float) -> tuple[Optional[WhatIf], str]:
        settings = self.settings
        if self.clairvoyant:
            whatif = true_whatif(live, history.workload, self.cluster, now, settings.horizon_s, history.estimate,
                                 settings.drain)
            return dataclasses.replace(whatif, objective=settings.score_objective), ""
        self.forecaster.fit(history.workload, history.finish, now, elapsed_s=self._elapsed(live, history))
        if not self.forecaster.has_history:
            return None, "no job finished in the history window: keeping the incumbent"
        slack = deadline_slack(history, now) if settings.objective == "deadline-misses" else None
        whatif = sampled_whatif(live, self.forecaster, self.cluster, now, settings.horizon_s, settings.futures,
                                self._rng, history.estimate, supplied=history.estimator is None,
                                drain=settings.drain, deadline_slack=slack)
        return dataclasses.replace(whatif, objective=settings.score_objective), ""

    def _elapsed(self, live: Workload, history: History) -> Optional[np.ndarray]:
        """Per job of the history, the work a live job has done (NaN for the others): the censored
        observations of the survival duration model (None for the empirical one, which has none)."""
        if self.settings.duration_model != "survival":
            return None
        elapsed = np.full(len(history.workload), np.nan)
        position = {job_id: index for index, job_id in enumerate(history.workload.job_ids.tolist())}
        known = [(position[job_id], done) for job_id, done in zip(live.job_ids.tolist(), work_done_s(live))
                 if job_id in position]
        if known:
            rows, done = zip(*known)
            elapsed[list(rows)] = done
        return elapsed

    def _search(self, score, base: SimConfig, start: SimConfig, start_score: float, candidates: int,
                seeds: list[SimConfig], scored: Optional[list] = None) -> tuple[SimConfig, float, int]:
        """TPE over the space for ``candidates`` simulations per future, the
        ``seeds`` first; knobs a policy lacks come from ``base``. Returns the
        best of ``start`` (already scored) and the candidates; every
        (candidate, score) is appended to ``scored``."""
        try:
            import optuna
        except ImportError:
            raise ItercastError("AutoSched searches with Optuna: pip install 'itercast[sched]'") from None

        optuna.logging.set_verbosity(logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=stream_seed(self.settings.seed, "search", self._searches),
                                             constant_liar=True,
                                             n_startup_trials=max(3, candidates // 3))
        self._searches += 1
        study = optuna.create_study(sampler=sampler)
        for seed in seeds:
            study.enqueue_trial(self.space.params_of(seed), skip_if_exists=True)
        penalty = start_score * THRASH_PENALTY if math.isfinite(start_score) else 1e18
        best, best_score = start, start_score
        done = 0
        while done < candidates:
            trials = [study.ask() for _ in range(min(self.settings.search_batch, candidates - done))]
            configs = [self.space.suggest(trial, base) for trial in trials]
            for trial, config, value in zip(trials, configs, score(configs)):
                study.tell(trial, value if math.isfinite(value) else penalty)
                if scored is not None:
                    scored.append((config, value))
                if value < best_score:
                    best, best_score = config, value
            done += len(trials)
        return best, best_score, candidates

    def _seeds(self, incumbent: SimConfig, home: SimConfig) -> list[SimConfig]:
        """Worth trying first: the last search's winner, home, and one
        duration-aware and one service-based policy."""
        seeds = [config for config in (self._last_best, home) if config is not None and config != incumbent]
        for policy in ("srtf", "las", "sjf"):
            if policy in self.space.policies and policy != incumbent.policy:
                seeds.append(dataclasses.replace(incumbent, policy=policy))
        return [seed for seed in seeds if self.space.contains(seed)]

    def close(self) -> None:
        self.evaluator.close()


@dataclass
class PrototypeTuner:
    """AutoSched's prototype: the last ``history_s`` of finished jobs replayed
    into an empty cluster, 2-9 Tiresias queues with limits at equal-mass
    percentiles of their GPU-seconds, average JCT, switch on ``margin``."""

    cluster: Cluster
    settings: TunerSettings = field(default_factory=TunerSettings)
    name: str = "prototype"

    def retune(self, simulation: Simulation, history: History) -> Retune:
        began = time.perf_counter()
        now, incumbent = simulation.now, simulation.config
        jobs = history.workload
        done = (history.finish <= now) & (history.finish >= now - self.settings.history_s)
        if not done.any():
            return Retune(now, incumbent, incumbent, math.nan, math.nan, 0, time.perf_counter() - began,
                          "no job finished in the history window: keeping the incumbent")
        replay = jobs.subset(done)
        gpu_seconds = replay.gpus * replay.duration
        configs = [incumbent]
        for queues in range(2, MAX_QUEUES + 1):
            limits = _percentile_limits(gpu_seconds, queues)
            candidate = dataclasses.replace(incumbent, policy="tiresias", queues=len(limits) + 1,
                                            queue_limits_gpu_s=limits)
            if limits and candidate not in configs:
                configs.append(candidate)
        scores = [_empty_cluster_jct(replay, self.cluster, dataclasses.replace(config, estimate="oracle"))
                  for config in configs]
        best = int(np.argmin(scores))
        chosen = configs[best] if scores[best] < scores[0] * (1 - self.settings.margin) else incumbent
        return Retune(now, incumbent, chosen, scores[0], scores[best], len(configs), time.perf_counter() - began)

    def close(self) -> None:
        pass


def within_tail_guard(candidate: list[FutureOutcome], reference: list[FutureOutcome], guard: float) -> bool:
    """Over the same futures, the candidate's mean p99 JCT and mean long-job
    slowdown exceed the reference's by at most ``guard``."""
    for metric in ("p99_jct_s", "long_jobs_slowdown"):
        mine = np.mean([getattr(outcome, metric) for outcome in candidate])
        theirs = np.mean([getattr(outcome, metric) for outcome in reference])
        if not mine <= theirs * (1 + guard):
            return False
    return True


def deadline_slack(history: History, now: float) -> np.ndarray:
    """How much time the jobs that finished by ``now`` were given: (deadline -
    submit) / duration of each with a deadline, drawn for the jobs the
    forecaster samples. A workload without deadlines cannot be tuned for them."""
    jobs = history.workload
    if jobs.deadlines is None:
        raise ItercastError(f"objective deadline-misses needs jobs with deadlines, and {jobs.source} has no "
                            "deadline column")
    known = (history.finish <= now) & ~np.isnan(jobs.deadlines)
    if not known.any():
        return np.empty(0)
    return (jobs.deadlines[known] - jobs.submit[known]) / jobs.duration[known]


def _percentile_limits(gpu_seconds: np.ndarray, queues: int) -> tuple[float, ...]:
    limits = np.unique(np.percentile(gpu_seconds, np.arange(1, queues) * 100.0 / queues))
    return tuple(float(limit) for limit in limits[limits > 0])


def _empty_cluster_jct(workload: Workload, cluster: Cluster, config: SimConfig) -> float:
    simulation = Simulation(workload, cluster, config)
    simulation.run()
    return float(simulation.result().jct.mean())
