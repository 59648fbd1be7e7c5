"""Workload forecasting for AutoSched: from what a scheduler knows at
``now`` (docs/forecast.md), sample plausible futures for the next horizon.

``WorkloadForecaster`` is the model: non-homogeneous Poisson arrivals with an
hour-of-day (or hour-of-week) profile scaled to the recent level, GPU count
and virtual cluster drawn from the recent mix, and durations drawn from the
recently finished jobs of the same group, shrunk vc x gpus -> gpus -> all and
jittered. ``HistoryReplay`` and ``SameHourLastWeek`` are the two naive
baselines, with the same ``fit``/``sample`` interface.

Calendar features use the clock of the workload as it is: Philly and Helios
times are seconds since the Unix epoch (UTC), so hour-of-day is the UTC hour;
Tiresias-format times count from the trace's own zero, and hour-of-day is
then the hour of that clock (hour 0 = the first 3,600 s after zero).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from itercast.sched import survival
from itercast.sched.estimator import GroupCodes, KnownJobs, check_job_columns, known_at, positive_seconds
from itercast.sim.cluster import DEFAULT_GPU_TYPE
from itercast.sim.workload import Workload

HOUR_S = 3600.0
DAY_S = 24 * HOUR_S
WEEK_S = 7 * DAY_S
# Weight, in expected arrivals, of the whole window's level against the recent one.
LEVEL_PRIOR_ARRIVALS = 5.0
# The longer history whose (vc, gpus) mix smooths the window's.
MIX_HISTORY_S = WEEK_S
# Duration models of WorkloadForecaster: the finished jobs' durations, or Kaplan-Meier with censoring.
DURATION_MODELS = ("empirical", "survival")


class ArrivalModel:
    """Arrival rate piecewise constant per clock hour: a profile over the 24
    hours of the day, or over the 168 hours of the week when the submissions
    given reach back at least a week and ``calendar`` is on, times the recent
    level.

    The profile is learned over ``calendar_history_s`` (over the last
    ``history_s`` without the weekly calendar). Each bin's rate is shrunk
    towards a coarser one, as a Gamma-Poisson posterior whose prior weighs
    ``smoothing`` hours of exposure: hour-of-week -> hour-of-day -> the mean
    rate. The default, 16 hours, leaves an hour-of-day bin learned over four
    weeks (28 h of exposure) 28/44 of its own rate, an hour-of-week bin (4 h)
    4/20 and an hour seen on a single day 1/17: on Philly and Helios an
    hour's past shape says little about its next occurrence beyond the
    level (docs/forecast.md).

    The level is arrivals over the last ``history_s`` divided by what the
    profile predicts for them, both weighted by recency (weights halve every
    ``halflife_s``): Philly's arrivals come in bursts, and the last hour
    predicts the next better than the last day does (docs/forecast.md).
    """

    def __init__(self, history_s: float = DAY_S, *, calendar: bool = True,
                 calendar_history_s: float = 4 * WEEK_S, smoothing: float = 16.0,
                 halflife_s: float = HOUR_S):
        self.history_s = positive_seconds("history_s", history_s)
        self.halflife_s = positive_seconds("halflife_s", halflife_s) if np.isfinite(halflife_s) else np.inf
        self.calendar = calendar
        self.calendar_history_s = positive_seconds("calendar_history_s", calendar_history_s)
        if not np.isfinite(smoothing) or smoothing < 0:
            raise ValueError(f"smoothing must be a non-negative number of hours, got {smoothing}")
        self.smoothing_s = float(smoothing) * HOUR_S
        self._rates = np.zeros(24)
        self._level = 0.0

    def fit(self, submit: np.ndarray, now: float, counts: Optional[np.ndarray] = None) -> "ArrivalModel":
        """``submit``: submit times known at ``now`` (later ones are ignored);
        ``counts``: how many submissions each time stands for, for binned data
        (default one each)."""
        if not np.isfinite(now):
            raise ValueError(f"now must be a finite number of seconds, got {now}")
        submit = np.asarray(submit, dtype=np.float64)
        counts = np.ones(len(submit)) if counts is None else np.asarray(counts, dtype=np.float64)
        if counts.shape != submit.shape:
            raise ValueError(f"counts has shape {counts.shape}, submit {submit.shape}: one count per time expected")
        known = submit < now
        submit, counts = submit[known], counts[known]
        earliest = submit.min() if len(submit) else now
        weekly = self.calendar and now - earliest >= WEEK_S
        span_start = max(earliest, now - self.calendar_history_s) if weekly else now - self.history_s
        in_span = submit >= span_start
        hour_bins = (submit[in_span] // HOUR_S).astype(np.int64)
        mean_rate = counts[in_span].sum() / (now - span_start)
        daily = self._shrunk_rates(hour_bins, counts[in_span], span_start, now, 24, np.full(24, mean_rate))
        self._rates = (self._shrunk_rates(hour_bins, counts[in_span], span_start, now, 168, np.tile(daily, 7))
                       if weekly else daily)
        self._level = self._recent_level(submit, counts, now)
        return self

    def _recent_level(self, submit: np.ndarray, counts: np.ndarray, now: float) -> float:
        """Recency-weighted arrivals over the window / what the profile
        predicts for them, shrunk towards the unweighted ratio by
        ``LEVEL_PRIOR_ARRIVALS`` expected arrivals (a sparse stream's
        recent level rests on too few arrivals to trust alone)."""
        window_start = now - self.history_s
        hours, overlap = _hour_pieces(window_start, now)
        piece_start = np.maximum(hours * HOUR_S, window_start)
        rates = self._rates[hours % len(self._rates)]
        in_window = submit >= window_start
        expected = float(np.dot(rates, overlap))
        if expected <= 0:
            return 0.0
        window_level = counts[in_window].sum() / expected
        weighted = float(np.dot(rates, _decayed_length(piece_start, piece_start + overlap, now, self.halflife_s)))
        observed = float(np.dot(recency_weights(submit[in_window], now, self.halflife_s), counts[in_window]))
        return (observed + LEVEL_PRIOR_ARRIVALS * window_level) / (weighted + LEVEL_PRIOR_ARRIVALS)

    def _shrunk_rates(self, hour_bins: np.ndarray, counts: np.ndarray, start: float, end: float, bins: int,
                      prior: np.ndarray) -> np.ndarray:
        hours, overlap = _hour_pieces(start, end)
        exposure = np.bincount(hours % bins, weights=overlap, minlength=bins)
        arrivals = np.bincount(hour_bins % bins, weights=counts, minlength=bins)
        with np.errstate(invalid="ignore"):
            rates = (arrivals + self.smoothing_s * prior) / (exposure + self.smoothing_s)
        return np.where(exposure + self.smoothing_s > 0, rates, prior)

    @property
    def weekly(self) -> bool:
        """True when the profile is over the hours of the week."""
        return len(self._rates) == 168

    def rate(self, t: np.ndarray) -> np.ndarray:
        """Arrivals per second at times ``t``."""
        hours = (np.asarray(t, dtype=np.float64) // HOUR_S).astype(np.int64)
        return self._level * self._rates[hours % len(self._rates)]

    def expected(self, start: float, end: float) -> float:
        """Expected number of arrivals in [start, end)."""
        _check_interval(start, end)
        hours, overlap = _hour_pieces(start, end)
        return self._level * float(np.dot(self._rates[hours % len(self._rates)], overlap))

    def sample(self, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
        """Sorted arrival times in [start, end), one draw of the Poisson process."""
        _check_interval(start, end)
        hours, overlap = _hour_pieces(start, end)
        piece_start = np.maximum(hours * HOUR_S, start)
        mass = self.rate(piece_start) * overlap
        cumulative = np.cumsum(mass)
        total = cumulative[-1] if len(cumulative) else 0.0
        if total <= 0:
            return np.empty(0)
        points = np.sort(rng.uniform(0.0, total, rng.poisson(total)))
        piece = np.minimum(np.searchsorted(cumulative, points, side="right"), len(mass) - 1)
        into = (points - (cumulative[piece] - mass[piece])) / mass[piece] * overlap[piece]
        return np.minimum(piece_start[piece] + into, np.nextafter(end, -np.inf))


def recency_weights(t: np.ndarray, now: float, halflife_s: float) -> np.ndarray:
    """Weight of an event at ``t`` seen from ``now``: halves every ``halflife_s``."""
    return np.exp2(-(now - t) / halflife_s)


def _decayed_length(start: np.ndarray, end: np.ndarray, now: float, halflife_s: float) -> np.ndarray:
    """The integral of ``recency_weights`` over each [start, end)."""
    if np.isinf(halflife_s):
        return end - start
    scale = halflife_s / np.log(2)
    return scale * (recency_weights(end, now, halflife_s) - recency_weights(start, now, halflife_s))


def _hour_pieces(start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """The clock hours that [start, end) touches, and the seconds of each inside it."""
    if end <= start:
        return np.empty(0, dtype=np.int64), np.empty(0)
    hours = np.arange(np.floor(start / HOUR_S), np.ceil(end / HOUR_S), dtype=np.int64)
    overlap = np.minimum((hours + 1) * HOUR_S, end) - np.maximum(hours * HOUR_S, start)
    return hours, overlap


def _check_interval(start: float, end: float) -> None:
    if not (np.isfinite(start) and np.isfinite(end)) or end < start:
        raise ValueError(f"need a finite interval with start <= end, got [{start}, {end})")


class DurationSampler:
    """Durations drawn from the jobs that finished recently, per group, with
    hierarchical shrinkage: a job of group (vc, gpus) draws from its group's
    durations with probability n / (n + min_group), else from its GPU
    count's, likewise, else from all. Conditioned on "longer than a", only
    the durations above a count (residual-life sampling). The draw d becomes
    a + (d - a) * exp(jitter * N(0, 1)): log-normal jitter on the part above
    a, so samples are not only copies and always exceed a."""

    def __init__(self, duration: np.ndarray, gpus: np.ndarray, vc_codes: np.ndarray,
                 *, min_group: float, jitter: float):
        self.min_group = float(min_group)
        self.jitter = float(jitter)
        self._values = np.unique(duration)
        ranks = np.searchsorted(self._values, duration)
        self._levels = tuple(_SortedGroups(keys, ranks, len(self._values)) for keys in (
            GroupCodes.vc_gpu_keys(vc_codes, gpus), gpus, np.zeros(len(duration), dtype=np.int64)))
        self._tail_factors = _tail_factors(duration)
        self.jobs = len(duration)

    def sample(self, gpus: np.ndarray, vc_codes: np.ndarray, at_least: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        n = len(gpus)
        above_rank = np.searchsorted(self._values, at_least, side="right")
        queries = (GroupCodes.vc_gpu_keys(vc_codes, gpus), gpus, np.zeros(n, dtype=np.int64))
        spans = [level.above(keys, above_rank) for level, keys in zip(self._levels, queries)]
        chosen = self._choose_level([stop - first for first, stop in spans], rng)
        first = np.choose(chosen, [first for first, _ in spans] + [np.zeros(n, dtype=np.int64)])
        stop = np.choose(chosen, [stop for _, stop in spans] + [np.ones(n, dtype=np.int64)])
        pick = first + np.floor(rng.random(n) * (stop - first)).astype(np.int64)
        level_of_pick = np.minimum(chosen, 2)
        drawn = np.choose(level_of_pick, [level.durations(self._values, pick) for level in self._levels])
        beyond_history = chosen == 3
        drawn[beyond_history] = at_least[beyond_history] * rng.choice(self._tail_factors, beyond_history.sum())
        residual = drawn - at_least
        total = at_least + residual * np.exp(self.jitter * rng.standard_normal(n))
        return np.maximum(total, np.nextafter(at_least, np.inf))

    def _choose_level(self, counts: list, rng: np.random.Generator) -> np.ndarray:
        """0: vc x gpus, 1: gpus, 2: all, 3: beyond every finished duration."""
        chosen = np.full(len(counts[0]), 3)
        for level in (2, 1, 0):
            count = counts[level]
            stay = rng.random(len(count)) * (count + self.min_group) < count if level < 2 else count > 0
            chosen = np.where(stay, level, chosen)
        return chosen


class _SortedGroups:
    """Durations (as ranks into the sorted distinct values) sorted by group,
    then by duration, as one integer code per job: the slice of a group's
    durations above a rank is two binary searches."""

    def __init__(self, keys: np.ndarray, ranks: np.ndarray, distinct: int):
        keep = keys >= 0
        self._groups, group = np.unique(keys[keep], return_inverse=True)
        self._stride = distinct + 1
        self._codes = np.sort(group * self._stride + ranks[keep])

    def above(self, keys: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[first, stop) indices of group ``keys``' durations of rank >= ``rank``."""
        if len(self._groups) == 0:
            empty = np.zeros(len(keys), dtype=np.int64)
            return empty, empty
        where = np.minimum(np.searchsorted(self._groups, keys), len(self._groups) - 1)
        known = self._groups[where] == keys
        first = np.searchsorted(self._codes, where * self._stride + rank)
        stop = np.searchsorted(self._codes, (where + 1) * self._stride)
        return first, np.where(known, stop, first)

    def durations(self, values: np.ndarray, pick: np.ndarray) -> np.ndarray:
        if len(self._codes) == 0:
            return np.zeros(len(pick))
        return values[self._codes[np.clip(pick, 0, len(self._codes) - 1)] % self._stride]


def _tail_factors(duration: np.ndarray) -> np.ndarray:
    """How far past the 90th percentile the longest tenth of durations runs,
    as ratios: past the longest duration ever seen, a job's total is its
    elapsed time times one of these."""
    if len(duration) == 0:
        return np.array([2.0])
    threshold = np.quantile(duration, 0.9)
    factors = duration[duration > threshold] / threshold
    return factors if len(factors) else np.array([2.0])


class WorkloadForecaster:
    """Fits on what a scheduler knows at ``now`` and samples futures.

    - ``history_s``: the window [now - history_s, now) whose arrivals set the
      level and the job mix, and whose finished jobs give durations.
    - ``duration_history_s``: a longer window for the durations (default
      ``history_s``). Under a growing backlog the jobs that finished lately
      are mostly short ones that overtook the rest, so a short window draws
      durations far too short for the jobs still waiting.
    - ``calendar``: learn an hour-of-week profile over ``calendar_history_s``
      when the jobs given reach back a week; else hour-of-day over the window.
    - ``smoothing``: hours of pseudo-exposure shrinking each hourly rate
      towards the coarser profile (see ``ArrivalModel``).
    - ``halflife_s``: recency half-life of the arrival level and of the
      window's (vc, gpus) mix.
    - ``mix_prior_jobs``: pseudo-jobs of the last week's (vc, gpus) mix
      added to the window's, so a GPU count seen last week can still occur.
    - ``min_group``: pseudo-count of the duration shrinkage (``DurationSampler``).
    - ``duration_jitter``: sigma of the log-normal duration jitter.
    - ``duration_model``: ``"empirical"`` draws durations from the finished
      jobs only (``DurationSampler``); ``"survival"`` from Kaplan-Meier
      curves that also count the jobs running at ``now`` (the ``elapsed_s``
      given to ``fit``) as censored observations, so that long jobs still
      running do not bias durations short (``itercast.sched.survival``).

    ``has_history`` is False until a fit saw at least one job finish in the
    window; ``sample`` then raises (the tuner keeps its incumbent instead).
    """

    def __init__(self, history_s: float = DAY_S, *, calendar: bool = True,
                 calendar_history_s: float = 4 * WEEK_S, smoothing: float = 16.0, halflife_s: float = HOUR_S,
                 mix_prior_jobs: float = 10.0, min_group: float = 5.0, duration_jitter: float = 0.1,
                 duration_history_s: Optional[float] = None, duration_model: str = "empirical"):
        if duration_model not in DURATION_MODELS:
            raise ValueError(f"duration_model must be one of {', '.join(map(repr, DURATION_MODELS))}, "
                             f"got {duration_model!r}")
        self.duration_model = duration_model
        self.history_s = positive_seconds("history_s", history_s)
        self.duration_history_s = positive_seconds(
            "duration_history_s", history_s if duration_history_s is None else duration_history_s)
        self.arrivals = ArrivalModel(history_s, calendar=calendar, calendar_history_s=calendar_history_s,
                                     smoothing=smoothing, halflife_s=halflife_s)
        if mix_prior_jobs < 0 or min_group <= 0 or duration_jitter < 0:
            raise ValueError("mix_prior_jobs and duration_jitter must be >= 0, min_group > 0")
        self.mix_prior_jobs = float(mix_prior_jobs)
        self.min_group = float(min_group)
        self.duration_jitter = float(duration_jitter)
        self.now: Optional[float] = None
        self._codes = GroupCodes(None)
        self._mix_keys = np.empty(0, dtype=np.int64)
        self._mix_cumulative = np.empty(0)
        self._durations: Optional[DurationSampler] = None

    def fit(self, jobs: Workload, finish: np.ndarray, now: float,
            elapsed_s: Optional[np.ndarray] = None) -> "WorkloadForecaster":
        """``jobs``: the jobs submitted before ``now`` (later ones are
        ignored); ``finish[i]``: job i's finish time, NaN (or after ``now``)
        if it was still unfinished at ``now``. Durations are learned from the
        jobs that finished in [now - duration_history_s, now]: in steady
        state these have the duration mix of arrivals, where "submitted and
        finished" would favour short jobs. ``elapsed_s[i]``: the seconds of
        work job i has done if it is running at ``now`` (NaN or 0 for a job
        not running or not started); the survival duration model counts
        these jobs as censored observations, the empirical one ignores them."""
        known = known_at(jobs, finish, now, since=float(now) - max(self.history_s, self.arrivals.calendar_history_s,
                                                                   self.duration_history_s))
        self.now = float(now)
        self.arrivals.fit(known.submit, self.now)
        mix_start = self.now - max(self.history_s, MIX_HISTORY_S)
        durations_from = self.now - self.duration_history_s
        recent = known.subset((known.submit >= mix_start) | known.finished_in(durations_from, self.now))
        running, elapsed = survival.running_at(jobs.submit, np.asarray(finish, dtype=np.float64), self.now,
                                               elapsed_s, len(jobs))
        survival_model = self.duration_model == "survival"
        vcs = recent.virtual_cluster
        if survival_model and vcs is not None:   # a VC whose only jobs are long-running ones keeps its groups
            vcs = np.concatenate([vcs, jobs.virtual_cluster[running]])
        self._codes = GroupCodes(vcs)
        vc_codes = self._codes.vc_codes(recent.virtual_cluster, len(recent))
        self._fit_mix(recent, vc_codes, mix_start)
        done = recent.finished_in(durations_from, self.now)
        if not survival_model:
            self._durations = DurationSampler(recent.duration[done], recent.gpus[done], vc_codes[done],
                                              min_group=self.min_group, jitter=self.duration_jitter)
            return self
        exit, event, entry = survival.window_observations(recent.duration[done], recent.finish[done], elapsed,
                                                          self.now, durations_from)
        running_vcs = self._codes.vc_codes(None if jobs.virtual_cluster is None else jobs.virtual_cluster[running],
                                           len(elapsed))
        self._durations = survival.SurvivalSampler(
            exit, event, entry, np.r_[recent.gpus[done], jobs.gpus[running]], np.r_[vc_codes[done], running_vcs],
            min_group=self.min_group, jitter=self.duration_jitter)
        return self

    def _fit_mix(self, known: KnownJobs, vc_codes: np.ndarray, mix_start: float) -> None:
        """The (vc, gpus) distribution of the window's submissions, weighted
        by recency, plus ``mix_prior_jobs`` jobs spread like the last week's."""
        keys = np.where(vc_codes >= 0, vc_codes, 0) << 32 | known.gpus
        in_window = known.submit >= self.now - self.history_s
        in_long = known.submit >= mix_start
        self._mix_keys, inverse = np.unique(keys[in_long], return_inverse=True)
        long_counts = np.bincount(inverse, minlength=len(self._mix_keys)).astype(np.float64)
        recency = recency_weights(known.submit[in_long], self.now, self.arrivals.halflife_s)
        window_counts = np.bincount(inverse, weights=recency * in_window[in_long], minlength=len(self._mix_keys))
        prior = self.mix_prior_jobs * long_counts / max(long_counts.sum(), 1.0)
        weights = window_counts + prior
        self._mix_cumulative = np.cumsum(weights) / weights.sum() if weights.sum() > 0 else np.empty(0)

    @property
    def has_history(self) -> bool:
        """True when a fit saw at least one job finish in its window."""
        return self._durations is not None and self._durations.jobs > 0

    def expected_arrivals(self, start: float, end: float) -> float:
        """Expected number of submissions in [start, end)."""
        self._require_fit()
        return self.arrivals.expected(start, end)

    def sample(self, horizon_s: float, rng: np.random.Generator) -> Workload:
        """One future: the jobs submitted in [now, now + horizon_s) (possibly none)."""
        self._require_history()
        horizon_s = _horizon(horizon_s)
        submit = self.arrivals.sample(self.now, self.now + horizon_s, rng)
        # Arrivals need submissions in the window, so the mix is never empty here.
        pick = np.searchsorted(self._mix_cumulative, rng.random(len(submit)), side="right")
        keys = self._mix_keys[np.minimum(pick, len(self._mix_keys) - 1)] if len(submit) else pick
        gpus = keys & 0xFFFFFFFF
        vc_codes = keys >> 32 if self._codes.names is not None else np.full(len(keys), -1, dtype=np.int64)
        durations = self._durations.sample(gpus, vc_codes, np.zeros(len(submit)), rng)
        return _future(submit, gpus, durations, self._codes.vc_names(vc_codes))

    def sample_durations(self, gpus: np.ndarray, virtual_cluster: Optional[np.ndarray],
                         at_least_s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Total durations of jobs already in the system, each drawn from its
        group's duration model conditioned on exceeding ``at_least_s`` (its
        elapsed run time): always > at_least_s."""
        self._require_history()
        at_least_s = np.asarray(at_least_s, dtype=np.float64)
        gpus = check_job_columns(gpus, virtual_cluster, at_least_s)
        if np.any(~np.isfinite(at_least_s) | (at_least_s < 0)):
            raise ValueError("at_least_s must be finite and >= 0")
        vc_codes = self._codes.vc_codes(virtual_cluster, len(gpus))
        return self._durations.sample(gpus, vc_codes, at_least_s, rng)

    def _require_fit(self) -> None:
        if self.now is None:
            raise ValueError("call fit() before forecasting")

    def _require_history(self) -> None:
        self._require_fit()
        if not self.has_history:
            raise ValueError("no job finished in the history window, so durations cannot be "
                             "sampled; check has_history before sampling")


def _horizon(horizon_s: float) -> float:
    horizon_s = float(horizon_s)
    if not np.isfinite(horizon_s) or horizon_s < 0:
        raise ValueError(f"horizon_s must be a finite number of seconds >= 0, got {horizon_s}")
    return horizon_s


def _future(submit: np.ndarray, gpus: np.ndarray, duration: np.ndarray,
            virtual_cluster: Optional[np.ndarray]) -> Workload:
    return Workload(
        job_ids=np.array([f"f{i}" for i in range(len(submit))], dtype=object),
        submit=np.asarray(submit, dtype=np.float64),
        gpus=np.asarray(gpus, dtype=np.int64),
        durations=np.asarray(duration, dtype=np.float64).reshape(-1, 1),
        gpu_types=(DEFAULT_GPU_TYPE,),
        virtual_cluster=virtual_cluster,
        source="<forecast>",
    )


class HistoryReplay:
    """Baseline: the submissions of the last ``horizon_s`` replayed, shifted
    by ``horizon_s``, as the future. Jobs that had not finished by ``now``
    get a duration drawn (``WorkloadForecaster.sample_durations``) longer than
    the time since their submission, as if they had started at once, which
    errs long for a job that queued."""

    def __init__(self, history_s: float = DAY_S):
        self.history_s = positive_seconds("history_s", history_s)
        self._durations = WorkloadForecaster(history_s, calendar=False)

    def fit(self, jobs: Workload, finish: np.ndarray, now: float) -> "HistoryReplay":
        self._durations.fit(jobs, finish, now)
        self._known = known_at(jobs, finish, now, since=float(now) - self.history_s)
        return self

    @property
    def has_history(self) -> bool:
        return self._durations.has_history

    def sample(self, horizon_s: float, rng: np.random.Generator) -> Workload:
        horizon_s = _horizon(horizon_s)
        if not self.has_history:
            raise ValueError("no job finished in the history window; check has_history before sampling")
        if horizon_s > self.history_s:
            raise ValueError(f"HistoryReplay replays at most history_s = {self.history_s:g} s, "
                             f"got a horizon of {horizon_s:g} s")
        return _replay(self._known, self._durations, horizon_s, horizon_s, rng)


class SameHourLastWeek:
    """Baseline: the submissions of [now - 7 d, now - 7 d + horizon_s),
    shifted by 7 days; durations of jobs unfinished at ``now`` drawn as in
    ``HistoryReplay``. Needs the jobs given to reach back a week."""

    def __init__(self, history_s: float = DAY_S):
        self._durations = WorkloadForecaster(history_s, calendar=False)
        self._reaches_last_week = False

    def fit(self, jobs: Workload, finish: np.ndarray, now: float) -> "SameHourLastWeek":
        self._durations.fit(jobs, finish, now)
        self._known = known_at(jobs, finish, now, since=float(now) - WEEK_S)
        self._reaches_last_week = len(jobs) > 0 and jobs.submit.min() <= float(now) - WEEK_S
        return self

    @property
    def has_history(self) -> bool:
        return self._durations.has_history and self._reaches_last_week

    def sample(self, horizon_s: float, rng: np.random.Generator) -> Workload:
        horizon_s = _horizon(horizon_s)
        if horizon_s > WEEK_S:
            raise ValueError(f"SameHourLastWeek forecasts at most a week ahead, got {horizon_s:g} s")
        if not self.has_history:
            raise ValueError("the jobs given do not reach back a week, or none finished in the window")
        return _replay(self._known, self._durations, horizon_s, WEEK_S, rng)


def _replay(known: KnownJobs, durations: WorkloadForecaster, horizon_s: float, shift_s: float,
            rng: np.random.Generator) -> Workload:
    """The known jobs submitted in [now - shift_s, now - shift_s + horizon_s), shifted by shift_s."""
    now = durations.now
    chosen = known.submitted_in(now - shift_s, now - shift_s + horizon_s)
    submit, gpus, duration = known.submit[chosen], known.gpus[chosen], known.duration[chosen]
    vcs = None if known.virtual_cluster is None else known.virtual_cluster[chosen]
    running = np.isnan(duration)
    if running.any():
        duration[running] = durations.sample_durations(
            gpus[running], None if vcs is None else vcs[running], now - submit[running], rng)
    return _future(submit + shift_s, gpus, duration, vcs)
