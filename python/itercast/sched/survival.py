"""Kaplan-Meier (product-limit) duration model for AutoSched's forecaster
(``WorkloadForecaster(duration_model="survival")``, docs/forecast.md).

Learning durations only from the jobs that finished is biased whenever
long jobs are still running: under a backlog, or soon after a trace starts,
the jobs still running are the long ones, and a model of the finished ones
draws durations too short. ``SurvivalSampler`` also counts the jobs running
at ``now``, as right-censored observations ("ran at least this long"), and
estimates each group's survival curve S(t) = P(duration > t) with the
Kaplan-Meier product-limit estimator.

Observations. The forecaster looks at the jobs alive at some point of the
window W = [now - H, now] (H = ``duration_history_s``): the jobs that
finished in W (events at their duration) and the jobs running at ``now``
(censored at the work they have done). Either may have begun before W; a
job enters the risk set only at the age it had when W opened (left
truncation, "delayed entry"): ``entry = max(0, age at now - H)``. Without
it, the jobs that ran across the window's start, all long ones, would be
over-represented (in steady state the finished-in-W jobs have the arrival
mix, and adding every running job on top of them would bias the curve
long); with it, the risk set at age t is the jobs that were of age t during
W, whichever way they ended.

Estimator, per group g, at each distinct event time u:
S_g(u) = prod_{u' <= u} (1 - d(u') / r(u')), d the jobs that ended at u',
r the jobs at risk at u' (entry < u' <= exit).

Sampling, as ``DurationSampler`` does but on S instead of the finished
durations: a job whose elapsed time is a draws from its group's curve
conditioned on T > a, i.e. from S(t) / S(a): with U ~ Uniform(0, 1), the
first event time u > a where S(u) <= U S(a). Shrinkage vc x gpus -> gpus
-> all as in ``DurationSampler``: a group with n observations above a is
used with probability n / (n + min_group), else the coarser level; all
jobs are used whenever any observation lies above a. A draw that falls in
the mass S_g(last event) that a group's curve leaves past its last event
(its longest jobs still running) lies, by the estimate, past the group's
longest observation (S is flat up to it; beyond, undefined): it goes on to
the next coarser level conditioned on exceeding that as well, and past the
longest observation of all jobs to the tail (``_ExponentialTail``).
With left truncation a curve can reach 0 while jobs that entered later run
on; a draw above such a point falls through the same way. The drawn total d
becomes a + (d - a) exp(jitter N(0, 1)), as in ``DurationSampler``.

Everything is vectorised: a fit sorts the observations once per level,
and a draw is a handful of binary searches per level.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from itercast.sched.estimator import GroupCodes

# The tail's hazard is fitted on the observations whose exit lies above
# this quantile of all exits: the last tenth of the curve.
TAIL_QUANTILE = 0.9


class KaplanMeier:
    """Product-limit curves of one grouping level, for every group at once.

    ``keys``: an integer group key per observation (-1: in no group);
    ``exit``: the observed duration (events) or the elapsed time (censored);
    ``event``: True where the job finished; ``entry``: the age from which the
    observation is at risk (0 unless left-truncated; entry < exit).
    ``values``: the sorted distinct exit times of all levels, the grid that
    times are ranked on."""

    def __init__(self, keys: np.ndarray, exit: np.ndarray, event: np.ndarray, entry: np.ndarray,
                 values: np.ndarray):
        keep = keys >= 0
        self._values = values
        self._groups, group = np.unique(keys[keep], return_inverse=True)
        group = group.astype(np.int64)
        stride = self._stride = len(values) + 1
        exit_rank = np.searchsorted(values, exit[keep])                    # exact: exit is in values
        # Number of grid values <= entry: entry >= values[j] <=> entry_rank >= j + 1.
        entry_rank = np.searchsorted(values, entry[keep], side="right")
        self._exit_codes = np.sort(group * stride + exit_rank)
        entry_codes = np.sort(group * stride + entry_rank)
        event_codes, deaths = np.unique((group * stride + exit_rank)[event[keep]], return_counts=True)
        row_group, row_rank = event_codes // stride, event_codes % stride
        group_end = (row_group + 1) * stride
        exiting = np.searchsorted(self._exit_codes, group_end) - np.searchsorted(self._exit_codes, event_codes)
        entered_later = np.searchsorted(entry_codes, group_end) - np.searchsorted(entry_codes, event_codes + 1)
        at_risk = np.maximum(exiting - entered_later, deaths)
        survival = _grouped_cumprod(1.0 - deaths / at_risk, row_group)
        self._row_codes = event_codes
        self._row_time = values[row_rank]
        self._row_survival = survival
        # S decreases within a group (strictly, until 0): searching g + (1 - S) finds the first u with S(u) <= s.
        self._row_keys = row_group + (1.0 - survival)
        groups = np.arange(len(self._groups))
        self._row_start = np.searchsorted(row_group, groups)
        self._row_stop = np.searchsorted(row_group, groups, side="right")
        self._longest = np.full(len(self._groups), -np.inf)
        np.maximum.at(self._longest, group, exit[keep])

    def curve(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        """Event times and S after each, of group ``key`` (empty if unknown)."""
        where = np.searchsorted(self._groups, key)
        if where >= len(self._groups) or self._groups[where] != key:
            return np.empty(0), np.empty(0)
        rows = slice(self._row_start[where], self._row_stop[where])
        return self._row_time[rows], self._row_survival[rows]

    def group_index(self, keys: np.ndarray) -> np.ndarray:
        """Index of each key's group, -1 where the group was never observed."""
        if len(self._groups) == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        where = np.minimum(np.searchsorted(self._groups, keys), len(self._groups) - 1)
        return np.where(self._groups[where] == keys, where, -1)

    def observed_above(self, group: np.ndarray, above_rank: np.ndarray) -> np.ndarray:
        """Observations of each group (index, -1: none) whose exit ranks >= ``above_rank``."""
        known = group >= 0
        base = np.where(known, group, 0) * self._stride
        count = (np.searchsorted(self._exit_codes, base + self._stride)
                 - np.searchsorted(self._exit_codes, base + above_rank))
        return np.where(known, count, 0)

    def draw_above(self, group: np.ndarray, above_rank: np.ndarray, uniform: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For groups (all known) and bounds ranked ``above_rank`` (number of
        grid values <= the bound): the first event time u above the bound
        with S(u) <= uniform * S(bound). Returns (found, time, the group's
        longest observation); ``time`` is meaningful only where ``found``.
        Not found: the draw fell in the mass the curve leaves past its last
        event, which the product-limit estimate puts past the group's
        longest observation (S is flat up to it)."""
        start, stop = self._row_start[group], self._row_stop[group]
        position = np.searchsorted(self._row_codes, group * self._stride + above_rank)
        survival_at_bound = np.where(position > start, self._row_survival[np.maximum(position - 1, 0)], 1.0)
        target = uniform * survival_at_bound
        row = np.maximum(np.searchsorted(self._row_keys, group + (1.0 - target)), start)
        # Past the bound, too: S(bound) = 0 while jobs that entered later run on (left truncation) finds none.
        found = (row < stop) & (self._row_codes[np.minimum(row, max(len(self._row_codes) - 1, 0))]
                                >= group * self._stride + above_rank) if len(self._row_codes) else row < stop
        time = self._row_time[np.minimum(row, max(len(self._row_time) - 1, 0))] if len(self._row_time) else (
            np.zeros(len(group)))
        return found, time, self._longest[group]


class _ExponentialTail:
    """Past the longest observation of all jobs the product-limit curve is
    undefined (when that observation is a job still running, S stays flat
    at S(last event) > 0 up to it). There the hazard is taken constant,
    fitted on the last tenth of the curve: events / time at risk of the
    observations whose exit is above the 90th percentile of exits (the
    censored maximum-likelihood estimate of an exponential tail, every
    still-running job's time at risk counting). A draw conditioned on T > b,
    b at or past the longest observation, is b + Exp(mean = 1 / hazard).

    Why this tail and not ``_tail_factors`` (the empirical sampler's
    "elapsed x a ratio of the longest tenth of finished durations"): those
    ratios are learned from finished jobs only, the very bias this model
    removes, and they scale the draw with the elapsed time however little
    the data say past their end. A power-law tail fitted with censoring
    would scale the same way, with a mean that need not exist (index <= 1),
    and a drained what-if (the tuner's review) must see every job end. The
    exponential tail uses the running jobs, has a finite mean, and being
    memoryless conditions exactly on any elapsed time past the data. Its
    cost: for heavy-tailed durations it draws the longest jobs somewhat
    short (docs/forecast.md)."""

    def __init__(self, exit: np.ndarray, event: np.ndarray, entry: np.ndarray):
        if len(exit) == 0:
            self.mean_excess = 1.0
            return
        threshold = float(np.quantile(exit, TAIL_QUANTILE))
        above = exit > threshold
        if not above.any():
            threshold, above = 0.0, exit > 0
        exposure = float(np.sum(exit[above] - np.maximum(entry[above], threshold)))
        events = int(np.count_nonzero(event[above]))
        # No event above the threshold: as if one were about to end (a long but finite tail).
        self.mean_excess = exposure / max(events, 1) if exposure > 0 else max(float(exit.max()), 1.0)

    def draw(self, start: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return start + self.mean_excess * rng.standard_exponential(len(start))


class SurvivalSampler:
    """``DurationSampler``'s interface (``sample``, ``jobs``) on Kaplan-Meier
    curves fitted to finished (``event``) and still-running observations,
    shrunk vc x gpus -> gpus -> all (module docstring)."""

    def __init__(self, exit: np.ndarray, event: np.ndarray, entry: np.ndarray, gpus: np.ndarray,
                 vc_codes: np.ndarray, *, min_group: float, jitter: float):
        exit = np.asarray(exit, dtype=np.float64)
        event = np.asarray(event, dtype=bool)
        entry = np.minimum(np.maximum(np.asarray(entry, dtype=np.float64), 0.0), exit)
        self.min_group = float(min_group)
        self.jitter = float(jitter)
        self._values = np.unique(exit)
        self._levels = tuple(KaplanMeier(keys, exit, event, entry, self._values) for keys in (
            GroupCodes.vc_gpu_keys(vc_codes, gpus), np.asarray(gpus, dtype=np.int64),
            np.zeros(len(exit), dtype=np.int64)))
        self._tail = _ExponentialTail(exit, event, entry)
        self.jobs = int(np.count_nonzero(event))       # finished jobs (events)
        self.censored = len(exit) - self.jobs

    @property
    def levels(self) -> tuple[KaplanMeier, KaplanMeier, KaplanMeier]:
        """The curves per vc x gpus, per gpus, and of all jobs (key 0)."""
        return self._levels

    @property
    def tail_mean_s(self) -> float:
        """Mean excess of a draw past the longest observation of all jobs."""
        return self._tail.mean_excess

    def sample(self, gpus: np.ndarray, vc_codes: np.ndarray, at_least: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        gpus = np.asarray(gpus, dtype=np.int64)
        at_least = np.asarray(at_least, dtype=np.float64)
        n = len(gpus)
        bound = at_least.copy()                      # rises past a group's longest observation on fall-through
        drawn = np.full(n, np.nan)
        pending = np.arange(n)
        queries = (GroupCodes.vc_gpu_keys(vc_codes, gpus), gpus, np.zeros(n, dtype=np.int64))
        for level, (curves, keys) in enumerate(zip(self._levels, queries)):
            if len(pending) == 0:
                break
            group = curves.group_index(keys[pending])
            above_rank = np.searchsorted(self._values, bound[pending], side="right")
            count = curves.observed_above(group, above_rank)
            if level < 2:
                use = rng.random(len(pending)) * (count + self.min_group) < count
            else:
                use = count > 0
            users = pending[use]
            found, time, last = curves.draw_above(group[use], above_rank[use], rng.random(len(users)))
            drawn[users[found]] = time[found]
            fell = users[~found]
            bound[fell] = np.maximum(bound[fell], last[~found])
            pending = np.concatenate([pending[~use], fell])
        if len(pending):
            drawn[pending] = self._tail.draw(bound[pending], rng)
        residual = drawn - at_least
        total = at_least + residual * np.exp(self.jitter * rng.standard_normal(n))
        return np.maximum(total, np.nextafter(at_least, np.inf))


def _grouped_cumprod(factor: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running product of ``factor`` restarting at each new ``group`` (sorted):
    as sums of logs, exact zeros (every job at risk ended) kept apart."""
    if len(factor) == 0:
        return np.empty(0)
    zero = factor <= 0
    logs = np.cumsum(np.log(np.where(zero, 1.0, factor)))
    zeros = np.cumsum(zero)
    first = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    starts = np.repeat(first, np.diff(np.r_[first, len(group)]))
    before_logs = np.where(starts > 0, logs[np.maximum(starts - 1, 0)], 0.0)
    before_zeros = np.where(starts > 0, zeros[np.maximum(starts - 1, 0)], 0)
    return np.where(zeros - before_zeros > 0, 0.0, np.exp(logs - before_logs))


def window_observations(duration: np.ndarray, finish: np.ndarray, elapsed: np.ndarray, now: float,
                        window_start: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exit, event, entry) of the jobs that finished in the window
    (``duration``, ``finish``) followed by those running at ``now``
    (``elapsed``). A job's age when the window opened is its entry: for a
    finished job, its duration less the time it ran in the window (as if it
    ran without pause up to its finish); for a running one, its elapsed time
    less the window's length."""
    window = now - window_start
    exit = np.concatenate([duration, elapsed])
    event = np.r_[np.ones(len(duration), dtype=bool), np.zeros(len(elapsed), dtype=bool)]
    entry = np.concatenate([np.maximum(duration - (finish - window_start), 0.0), np.maximum(elapsed - window, 0.0)])
    return exit, event, entry


def running_at(submit: np.ndarray, finish: np.ndarray, now: float, elapsed_s: Optional[np.ndarray],
               jobs: int) -> tuple[np.ndarray, np.ndarray]:
    """Mask of the jobs running at ``now`` with work done, from the
    ``elapsed_s`` a forecaster's fit was given (None: no job), and their
    elapsed times."""
    if elapsed_s is None:
        return np.zeros(jobs, dtype=bool), np.empty(0)
    elapsed_s = np.asarray(elapsed_s, dtype=np.float64)
    if elapsed_s.shape != (jobs,):
        raise ValueError(f"elapsed_s has shape {elapsed_s.shape}, expected ({jobs},): one value per job "
                         "of jobs (NaN or 0 for a job not running)")
    if np.any(np.isinf(elapsed_s) | (elapsed_s < 0)):
        raise ValueError("elapsed_s must be finite and >= 0 (NaN: not running)")
    running = (submit < now) & ~(finish <= now) & (elapsed_s > 0)
    # Work done on the fastest GPU type never exceeds the time since submission (a minute's slack for
    # clocks of real logs; more points to an array not in the order of jobs).
    since_submit = now - submit[running]
    elapsed = elapsed_s[running]
    late = elapsed > since_submit * (1 + 1e-6) + 60.0
    if late.any():
        first = int(np.flatnonzero(running)[np.argmax(late)])
        raise ValueError(f"elapsed_s[{first}] = {elapsed_s[first]:g} s exceeds the {now - submit[first]:g} s since "
                         "that job's submission: is elapsed_s in the order of jobs?")
    return running, np.minimum(elapsed, since_submit)
