import numpy as np
import pytest

from itercast.sched.forecast import (DAY_S, HOUR_S, WEEK_S, ArrivalModel, HistoryReplay, SameHourLastWeek,
                                     WorkloadForecaster)
from itercast.sim import WorkloadError
from itercast.sim.cluster import DEFAULT_GPU_TYPE

NOW = 100 * DAY_S   # a midnight on the clock, so hour h of a day is [h, h + 1) * 3600 after it
BUSY_HOURS = np.arange(8, 20)


def hourly_rates(day_rate=200.0, night_rate=50.0):
    """Arrivals per hour for each hour of the day: busy 08:00-20:00."""
    rates = np.full(24, night_rate)
    rates[BUSY_HOURS] = day_rate
    return rates


def poisson_arrivals(rng, start, end, rate_of_hour):
    """Submit times in [start, end) from a Poisson process with rate_of_hour(clock hour) per hour."""
    hours = np.arange(start // HOUR_S, end // HOUR_S)
    counts = rng.poisson([rate_of_hour(int(hour)) for hour in hours])
    return np.sort(np.concatenate([hour * HOUR_S + rng.uniform(0, HOUR_S, n) for hour, n in zip(hours, counts)]))


@pytest.fixture
def steady(make_workload):
    """Two days of a daily pattern, one VC and one GPU count per job kind, all finished by NOW."""
    rng = np.random.default_rng(1)
    rates = hourly_rates()
    submit = poisson_arrivals(rng, NOW - 2 * DAY_S, NOW, lambda hour: rates[hour % 24])
    n = len(submit)
    gpus = rng.choice([1, 8], n, p=[0.75, 0.25])
    vc = rng.choice(np.array(["A", "B"], dtype=object), n)
    # Group (A, 8) runs 5,000-6,000 s, every other job 10-100 s.
    duration = np.where((vc == "A") & (gpus == 8), rng.uniform(5000, 6000, n), rng.uniform(10, 100, n))
    submit = np.minimum(submit, NOW - 6001)
    jobs = make_workload(submit, gpus, duration, vc)
    return jobs, jobs.submit + jobs.duration


def test_expected_arrivals_follow_the_daily_profile(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster(calendar=False, smoothing=0, halflife_s=np.inf).fit(jobs, finish, NOW)
    yesterday = np.histogram(jobs.submit, bins=NOW - DAY_S + HOUR_S * np.arange(25))[0]
    expected = [forecaster.expected_arrivals(NOW + h * HOUR_S, NOW + (h + 1) * HOUR_S) for h in range(24)]
    np.testing.assert_allclose(expected, yesterday, rtol=1e-9)
    # The defaults shrink the hours towards the day's mean but keep its total.
    default = WorkloadForecaster(calendar=False, halflife_s=np.inf).fit(jobs, finish, NOW)
    assert default.expected_arrivals(NOW, NOW + DAY_S) == pytest.approx(yesterday.sum())
    busy = default.expected_arrivals(NOW + 8 * HOUR_S, NOW + 20 * HOUR_S) / 12
    quiet = default.expected_arrivals(NOW, NOW + 8 * HOUR_S) / 8
    assert 50 < quiet < busy < 200


def test_expected_arrivals_learn_the_week(make_workload):
    rng = np.random.default_rng(2)
    weekend = {2, 3}   # days since the epoch mod 7: day 0 (1970-01-01) was a Thursday
    rate = lambda hour: 10.0 if (hour // 24) % 7 in weekend else 100.0   # noqa: E731
    submit = poisson_arrivals(rng, NOW - 4 * WEEK_S, NOW, rate)
    jobs = make_workload(submit, 1, 60.0, "A")
    unsmoothed = WorkloadForecaster(smoothing=0, halflife_s=np.inf).fit(jobs, jobs.submit + 60, NOW)
    default = WorkloadForecaster().fit(jobs, jobs.submit + 60, NOW)
    assert unsmoothed.arrivals.weekly and default.arrivals.weekly
    for day in range(7):
        start = NOW + day * DAY_S
        truth = 24 * rate(int(start // HOUR_S))
        assert unsmoothed.expected_arrivals(start, start + DAY_S) == pytest.approx(truth, rel=0.1)
    saturday = NOW + ((2 - NOW // DAY_S) % 7) * DAY_S
    monday = saturday + 2 * DAY_S
    assert default.expected_arrivals(saturday, saturday + DAY_S) < default.expected_arrivals(monday, monday + DAY_S)
    flat = WorkloadForecaster(calendar=False, halflife_s=np.inf).fit(jobs, jobs.submit + 60, NOW)
    assert not flat.arrivals.weekly


def test_level_follows_a_recent_burst(make_workload):
    rng = np.random.default_rng(3)
    submit = poisson_arrivals(rng, NOW - DAY_S, NOW, lambda hour: 400.0 if hour >= NOW // HOUR_S - 3 else 50.0)
    jobs = make_workload(submit, 1, 1.0, "A")
    finish = jobs.submit + 1.0
    flat = {"calendar": False, "smoothing": 1e6}   # no hour-of-day profile: the level alone
    recent = WorkloadForecaster(**flat).fit(jobs, finish, NOW).expected_arrivals(NOW, NOW + HOUR_S)
    whole_day = WorkloadForecaster(**flat, halflife_s=np.inf).fit(jobs, finish, NOW)
    assert recent > 300 > 120 > whole_day.expected_arrivals(NOW, NOW + HOUR_S)


def test_sampled_counts_are_poisson_with_the_expected_mean(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster().fit(jobs, finish, NOW)
    expected = forecaster.expected_arrivals(NOW, NOW + 2 * HOUR_S)
    rng = np.random.default_rng(4)
    counts = np.array([len(forecaster.arrivals.sample(NOW, NOW + 2 * HOUR_S, rng)) for _ in range(2000)])
    assert abs(counts.mean() - expected) < 4 * np.sqrt(expected / len(counts))
    assert 0.85 < counts.var() / counts.mean() < 1.15


def test_sample_is_a_workload_of_the_horizon(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster().fit(jobs, finish, NOW)
    future = forecaster.sample(6 * HOUR_S, np.random.default_rng(5))
    assert len(future) > 0
    assert future.job_ids.tolist() == [f"f{i}" for i in range(len(future))]
    assert future.gpu_types == (DEFAULT_GPU_TYPE,)
    assert np.all(np.diff(future.submit) >= 0)
    assert future.submit.min() >= NOW and future.submit.max() < NOW + 6 * HOUR_S
    assert set(future.gpus.tolist()) <= {1, 8} and set(future.virtual_cluster.tolist()) <= {"A", "B"}
    assert np.all(future.duration > 0)
    assert len(forecaster.sample(0.0, np.random.default_rng(5))) == 0


def test_durations_come_from_the_group(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster(duration_jitter=0.0).fit(jobs, finish, NOW)
    rng = np.random.default_rng(6)
    n = 4000
    group = forecaster.sample_durations(np.full(n, 8), np.full(n, "A", dtype=object), np.zeros(n), rng)
    other = forecaster.sample_durations(np.full(n, 1), np.full(n, "A", dtype=object), np.zeros(n), rng)
    assert np.isin(group, jobs.duration).all() and np.isin(other, jobs.duration).all()
    assert np.mean((group >= 5000) & (group <= 6000)) > 0.97    # shrinkage leaves a little to the fallbacks
    assert np.mean(other <= 100) > 0.97
    jittered = WorkloadForecaster().fit(jobs, finish, NOW).sample_durations(
        np.full(n, 8), np.full(n, "A", dtype=object), np.zeros(n), rng)
    assert not np.isin(jittered, jobs.duration).any()
    assert 4000 < np.median(jittered) < 7000


def test_residual_durations_always_exceed_the_elapsed_time(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster().fit(jobs, finish, NOW)
    rng = np.random.default_rng(7)
    at_least = np.concatenate([np.zeros(100), rng.uniform(0, 6000, 1000), [5999.0, 6000.0, 1e6, 1e9]])
    n = len(at_least)
    gpus = rng.choice([1, 8, 2], n)
    vc = rng.choice(np.array(["A", "B", "unseen"], dtype=object), n)
    for _ in range(20):
        total = forecaster.sample_durations(gpus, vc, at_least, rng)
        assert np.all(total > at_least) and np.all(np.isfinite(total))
    exact = WorkloadForecaster(duration_jitter=0.0).fit(jobs, finish, NOW)
    halfway = exact.sample_durations(np.full(500, 8), np.full(500, "A", dtype=object), np.full(500, 5500.0), rng)
    assert np.isin(halfway, jobs.duration).all() and np.all(halfway > 5500)


def test_only_what_is_known_at_now_is_used(steady, make_workload):
    jobs, finish = steady
    finish = finish.copy()
    still_running = np.arange(0, len(jobs), 7)
    finish[still_running] = np.nan
    finish[1::7] = NOW + 10.0   # finishes after now: unknown at now too
    changed_duration = jobs.duration.copy()
    changed_duration[still_running] = 1e7
    changed_duration[1::7] = 3.0
    later = np.concatenate([jobs.submit, [NOW + 5.0, NOW + 50.0]])
    vcs = np.concatenate([jobs.virtual_cluster, ["Z", "Z"]])
    original = make_workload(later, np.r_[jobs.gpus, 1, 1], np.r_[jobs.duration, 1.0, 2.0], vcs)
    changed = make_workload(later, np.r_[jobs.gpus, 128, 64], np.r_[changed_duration, 9e6, 9e6], vcs)
    finish = np.r_[finish, NOW + 6.0, NOW + 52.0]
    futures = [WorkloadForecaster().fit(workload, finish, NOW).sample(6 * HOUR_S, np.random.default_rng(8))
               for workload in (original, changed)]
    for column in ("submit", "gpus", "durations", "virtual_cluster"):
        np.testing.assert_array_equal(getattr(futures[0], column), getattr(futures[1], column))


def test_same_seed_same_future(steady):
    jobs, finish = steady
    forecaster = WorkloadForecaster().fit(jobs, finish, NOW)
    first, again = (forecaster.sample(3 * HOUR_S, np.random.default_rng(9)) for _ in range(2))
    other = forecaster.sample(3 * HOUR_S, np.random.default_rng(10))
    np.testing.assert_array_equal(first.submit, again.submit)
    np.testing.assert_array_equal(first.durations, again.durations)
    assert len(first) != len(other) or not np.array_equal(first.submit, other.submit)


def test_no_history_is_reported_not_sampled(make_workload):
    empty = make_workload([], 1, 1.0, "A")
    forecaster = WorkloadForecaster().fit(empty, np.array([]), NOW)
    assert not forecaster.has_history
    assert forecaster.expected_arrivals(NOW, NOW + HOUR_S) == 0
    with pytest.raises(ValueError, match="has_history"):
        forecaster.sample(HOUR_S, np.random.default_rng(0))
    running = make_workload([NOW - 100.0], 1, 1e6, "A")
    assert not WorkloadForecaster().fit(running, np.array([np.nan]), NOW).has_history
    for baseline in (HistoryReplay(), SameHourLastWeek()):
        assert not baseline.fit(running, np.array([np.nan]), NOW).has_history


def test_tiresias_format_has_no_virtual_cluster(make_workload):
    rng = np.random.default_rng(11)
    submit = np.sort(rng.uniform(0, 3 * HOUR_S, 300))
    gpus = rng.choice([1, 4], 300)
    jobs = make_workload(submit, gpus, np.where(gpus == 4, 5000.0, 50.0))
    now = 3 * HOUR_S + 10_000
    forecaster = WorkloadForecaster(duration_jitter=0.0).fit(jobs, jobs.submit + jobs.duration, now)
    futures = [forecaster.sample(3 * HOUR_S, rng) for _ in range(10)]
    assert all(future.virtual_cluster is None for future in futures)
    gpus, duration = (np.concatenate([getattr(future, name) for future in futures]) for name in ("gpus", "duration"))
    assert set(duration.tolist()) == {50.0, 5000.0}
    assert np.mean(duration == np.where(gpus == 4, 5000.0, 50.0)) > 0.95   # the rest fell back to all jobs


def test_bad_input(steady):
    jobs, finish = steady
    with pytest.raises(ValueError, match="fit"):
        WorkloadForecaster().sample(HOUR_S, np.random.default_rng(0))
    with pytest.raises(WorkloadError, match="one finish time per job"):
        WorkloadForecaster().fit(jobs, finish[:-1], NOW)
    forecaster = WorkloadForecaster().fit(jobs, finish, NOW)
    with pytest.raises(ValueError, match="horizon_s"):
        forecaster.sample(-1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="start <= end"):
        forecaster.expected_arrivals(NOW + 10, NOW)
    with pytest.raises(WorkloadError, match="rows"):
        forecaster.sample_durations(np.array([1, 1]), None, np.array([0.0]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="at_least_s"):
        forecaster.sample_durations(np.array([1]), None, np.array([-1.0]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="smoothing"):
        ArrivalModel(smoothing=-1)
    with pytest.raises(ValueError, match="now"):
        ArrivalModel().fit(jobs.submit, np.inf)
    with pytest.raises(ValueError, match="one count per time"):
        ArrivalModel().fit(jobs.submit, NOW, counts=np.ones(3))


def test_history_replay_shifts_the_last_horizon(steady):
    jobs, finish = steady
    finish = finish.copy()
    finish[-1] = np.nan
    replay = HistoryReplay().fit(jobs, finish, NOW)
    future = replay.sample(2 * HOUR_S, np.random.default_rng(12))
    replayed = jobs.submit >= NOW - 2 * HOUR_S
    np.testing.assert_allclose(future.submit, jobs.submit[replayed] + 2 * HOUR_S)
    np.testing.assert_array_equal(future.duration[:-1], jobs.duration[replayed][:-1])
    assert future.duration[-1] > NOW - jobs.submit[-1]
    with pytest.raises(ValueError, match="at most"):
        replay.sample(2 * DAY_S, np.random.default_rng(12))


def test_same_hour_last_week_needs_a_week(steady, make_workload):
    jobs, finish = steady
    assert not SameHourLastWeek().fit(jobs, finish, NOW).has_history
    # A job just before the replayed hour shows the jobs reach back a week; the next one is replayed.
    week_ago = make_workload(np.r_[NOW - WEEK_S - 60, NOW - WEEK_S + 60, jobs.submit], np.r_[1, 2, jobs.gpus],
                             np.r_[10.0, 30.0, jobs.duration], np.concatenate([["A", "B"], jobs.virtual_cluster]))
    baseline = SameHourLastWeek().fit(week_ago, week_ago.submit + week_ago.duration, NOW)
    future = baseline.sample(HOUR_S, np.random.default_rng(13))
    assert future.submit.tolist() == [NOW + 60] and future.gpus.tolist() == [2] and future.duration.tolist() == [30.0]


def test_philly_forecast(philly):
    jobs, finish = philly
    now = np.quantile(jobs.submit, 0.5)
    forecaster = WorkloadForecaster().fit(jobs, finish, now)
    assert forecaster.has_history and forecaster.arrivals.weekly
    rng = np.random.default_rng(14)
    futures = [forecaster.sample(6 * HOUR_S, rng) for _ in range(20)]
    expected = forecaster.expected_arrivals(now, now + 6 * HOUR_S)
    assert abs(np.mean([len(future) for future in futures]) - expected) < 4 * np.sqrt(expected / 20) + 1
    seen = set(jobs.virtual_cluster.tolist())
    for future in futures:
        assert set(future.virtual_cluster.tolist()) <= seen
        assert np.all(future.duration > 0) and np.all(np.isin(future.gpus, jobs.gpus))
    running = np.flatnonzero((jobs.submit < now) & (finish > now))[:200]
    elapsed = now - jobs.submit[running]
    total = forecaster.sample_durations(jobs.gpus[running], jobs.virtual_cluster[running], elapsed, rng)
    assert np.all(total > elapsed)
