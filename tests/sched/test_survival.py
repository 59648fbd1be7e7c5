import numpy as np
import pytest

from itercast.sched.forecast import DAY_S, HOUR_S, WorkloadForecaster
from itercast.sched.survival import SurvivalSampler

NOW = 100 * DAY_S


def sampler(exit, event, entry=None, gpus=1, vc_codes=-1, min_group=5.0, jitter=0.0):
    exit = np.asarray(exit, dtype=np.float64)
    n = len(exit)
    return SurvivalSampler(exit, np.asarray(event, dtype=bool), np.zeros(n) if entry is None else entry,
                           np.broadcast_to(gpus, n).astype(np.int64), np.broadcast_to(vc_codes, n).astype(np.int64),
                           min_group=min_group, jitter=jitter)


# Events at 1, 3, 3, 6; censored at 2, 3 (tied with the events: at risk at 3), 4, 7.
HAND_EXIT = [1, 2, 3, 3, 3, 4, 6, 7]
HAND_EVENT = [1, 0, 1, 1, 0, 0, 1, 0]


def test_kaplan_meier_by_hand():
    times, survival = sampler(HAND_EXIT, HAND_EVENT).levels[2].curve(0)
    # S(1) = 7/8; S(3) = 7/8 (1 - 2/6); S(6) = 7/12 (1 - 1/2), 2 at risk (6 and 7).
    assert times.tolist() == [1.0, 3.0, 6.0]
    np.testing.assert_allclose(survival, [7 / 8, 7 / 12, 7 / 24], rtol=1e-12)
    # Delayed entry: a job censored at 5 that entered at 2.5 is at risk at 3 only.
    exit, event = HAND_EXIT + [5], HAND_EVENT + [0]
    entry = np.r_[np.zeros(8), 2.5]
    times, survival = sampler(exit, event, entry).levels[2].curve(0)
    np.testing.assert_allclose(survival, [7 / 8, 7 / 8 * 5 / 7, 7 / 8 * 5 / 7 / 2], rtol=1e-12)
    # Without censoring the curve is one minus the empirical distribution function.
    times, survival = sampler([5, 1, 2, 2, 9], [1] * 5).levels[2].curve(0)
    assert times.tolist() == [1.0, 2.0, 5.0, 9.0]
    np.testing.assert_allclose(survival, [0.8, 0.4, 0.2, 0.0], atol=1e-12)


def test_forecaster_fits_the_same_curve(make_workload):
    """Through fit: finished jobs are events, running ones censored at elapsed_s."""
    exit, event = np.array(HAND_EXIT, dtype=float), np.array(HAND_EVENT, dtype=bool)
    extra = 1000.0    # a queued job (elapsed 0) adds nothing
    submit = NOW - 100 - np.r_[exit, extra]
    jobs = make_workload(submit, 1, np.r_[exit + 50 * ~event, 60.0], "A")
    finish = np.where(np.r_[event, False], submit + np.r_[exit, 0], np.nan)
    elapsed = np.r_[np.where(event, np.nan, exit), 0.0]
    forecaster = WorkloadForecaster(duration_model="survival").fit(jobs, finish, NOW, elapsed_s=elapsed)
    for level, key in zip(forecaster._durations.levels, (0 << 32 | 1, 1, 0)):   # (vc A, 1 GPU), 1 GPU, all
        times, survival = level.curve(key)
        assert times.tolist() == [1.0, 3.0, 6.0]
        np.testing.assert_allclose(survival, [7 / 8, 7 / 12, 7 / 24], rtol=1e-12)
    # Without elapsed_s the running jobs are unknown: only the events count.
    plain = WorkloadForecaster(duration_model="survival").fit(jobs, finish, NOW)
    np.testing.assert_allclose(plain._durations.levels[2].curve(0)[1], [3 / 4, 1 / 4, 0], atol=1e-12)


def test_conditioned_draws_follow_the_curve():
    model = sampler(HAND_EXIT, HAND_EVENT)
    n = 60_000
    total = model.sample(np.ones(n, dtype=np.int64), np.full(n, -1), np.full(n, 2.0), np.random.default_rng(1))
    # Given T > 2 (S(2) = 7/8): T = 3 w.p. (7/8 - 7/12) / (7/8) = 1/3, T = 6 w.p. 1/3, and 1/3 is left past the
    # last event, which the curve puts past the longest observation (7): the tail.
    assert np.all(total > 2.0)
    assert np.mean(total == 3.0) == pytest.approx(1 / 3, abs=0.01)
    assert np.mean(total == 6.0) == pytest.approx(1 / 3, abs=0.01)
    assert np.mean(total > 7.0) == pytest.approx(1 / 3, abs=0.01)


def test_conditioned_draws_always_exceed_at_least():
    rng = np.random.default_rng(2)
    exit = np.round(rng.lognormal(6, 1.5, 3000))
    model = sampler(exit, rng.random(3000) < 0.7, gpus=rng.choice([1, 2, 8], 3000),
                    vc_codes=rng.choice([0, 1], 3000), jitter=0.1)
    n = 20_000
    at_least = np.concatenate([np.zeros(5000), rng.choice(exit, 5000), rng.uniform(0, exit.max(), 5000),
                               exit.max() * rng.uniform(1, 10, 5000)])
    gpus, vcs = rng.choice([1, 2, 4, 8], n), rng.choice([-1, 0, 1], n)
    total = model.sample(gpus, vcs, at_least, rng)
    assert np.all(np.isfinite(total)) and np.all(total > at_least)


def test_tail_past_the_last_observation():
    # Events 1..20, censored at 15 and 30. The tail is fitted on the exits above their 90th percentile (18.9):
    # events 19 and 20, the job censored at 30; time at risk 0.1 + 1.1 + 11.1 = 12.3 s, 2 events: a mean of 6.15 s.
    exit = np.r_[np.arange(1.0, 21.0), 15.0, 30.0]
    model = sampler(exit, np.r_[np.ones(20, dtype=bool), False, False])
    assert model.tail_mean_s == pytest.approx(12.3 / 2)
    n = 50_000
    rng = np.random.default_rng(3)
    for at_least, start in ((25.0, 30.0), (1000.0, 1000.0)):
        # Past the last event (20): the curve is flat to the longest observation (30), then exponential.
        total = model.sample(np.ones(n, dtype=np.int64), np.full(n, -1), np.full(n, at_least), rng)
        assert np.all(total > start)
        assert np.mean(total - start) == pytest.approx(6.15, rel=0.03)
        assert np.median(total - start) == pytest.approx(6.15 * np.log(2), rel=0.03)


def test_shrinkage_to_coarser_groups():
    # vc 0 x 8 GPUs: 2 jobs of 5,000 s; vc 1 x 8 GPUs: 98 of 100 s; 1 GPU: 900 of 10 s.
    exit = np.r_[np.full(2, 5000.0), np.full(98, 100.0), np.full(900, 10.0)]
    gpus = np.r_[np.full(100, 8), np.full(900, 1)]
    vcs = np.r_[0, 0, np.full(98, 1), np.full(900, 1)]
    model = sampler(exit, np.ones(1000, dtype=bool), gpus=gpus, vc_codes=vcs, min_group=5.0)
    n = 200_000
    total = model.sample(np.full(n, 8), np.zeros(n, dtype=np.int64), np.zeros(n), np.random.default_rng(4))
    own, by_gpus = 2 / 7, 100 / 105
    expected = own + (1 - own) * (by_gpus * 2 / 100 + (1 - by_gpus) * 2 / 1000)
    assert np.mean(total == 5000.0) == pytest.approx(expected, abs=0.005)
    assert np.mean(total == 100.0) == pytest.approx((1 - own) * (by_gpus * 98 / 100 + (1 - by_gpus) * 98 / 1000),
                                                    abs=0.005)
    # An unknown virtual cluster starts at its GPU count.
    unknown = model.sample(np.full(n, 8), np.full(n, -1), np.zeros(n), np.random.default_rng(5))
    assert np.mean(unknown == 5000.0) == pytest.approx(by_gpus * 2 / 100 + (1 - by_gpus) * 2 / 1000, abs=0.003)


def test_a_group_seen_only_running_draws_past_its_longest(make_workload):
    """VC Z's 16-GPU jobs were submitted over a week ago and all still run: the
    empirical model draws them like everyone's short jobs, the survival model
    past their elapsed time (the VC is known although none of its jobs is
    recent)."""
    rng = np.random.default_rng(6)
    short = NOW - rng.uniform(0, DAY_S, 500)
    old = NOW - rng.uniform(8, 10, 50) * DAY_S
    submit = np.r_[old, short]
    jobs = make_workload(submit, np.r_[np.full(50, 16), np.ones(500, dtype=int)],
                         np.r_[np.full(50, 20 * DAY_S), np.full(500, HOUR_S)], np.r_[["Z"] * 50, ["A"] * 500])
    finish = np.where(submit + jobs.duration <= NOW, submit + jobs.duration, np.nan)
    elapsed = np.where(np.isnan(finish), NOW - submit, np.nan)
    n = 5000
    draws = {}
    for model in ("empirical", "survival"):
        forecaster = WorkloadForecaster(duration_model=model).fit(jobs, finish, NOW, elapsed_s=elapsed)
        draws[model] = forecaster.sample_durations(np.full(n, 16), np.array(["Z"] * n, dtype=object), np.zeros(n),
                                                   np.random.default_rng(7))
    assert np.median(draws["empirical"]) < 2 * HOUR_S
    assert np.mean(draws["survival"] > 10 * DAY_S) > 0.97


def backlog(seed=8, n=10_000, span_s=12 * HOUR_S, median_s=HOUR_S, sigma=1.2):
    """Lognormal durations; a cluster has been starting queued jobs at a steady
    rate since NOW - span_s (all submitted before): at NOW the finished ones
    are events, the started but unfinished ones run, with their elapsed time."""
    rng = np.random.default_rng(seed)
    start = np.sort(NOW - rng.uniform(0, span_s, n))
    duration = median_s * np.exp(sigma * rng.standard_normal(n))
    finish = np.where(start + duration <= NOW, start + duration, np.nan)
    elapsed = np.where(np.isnan(finish), NOW - start, np.nan)
    return start, duration, finish, elapsed


def test_survival_removes_the_censoring_bias(make_workload):
    median_s, sigma = HOUR_S, 1.2
    start, duration, finish, elapsed = backlog(median_s=median_s, sigma=sigma)
    jobs = make_workload(start - 600.0, 1, duration, "A")
    truth_median, truth_mean = median_s, median_s * np.exp(sigma ** 2 / 2)
    running = ~np.isnan(elapsed)
    assert 0.1 < running.mean() < 0.2
    n = 40_000
    new, live = {}, {}
    for model in ("empirical", "survival"):
        forecaster = WorkloadForecaster(duration_model=model).fit(jobs, finish, NOW, elapsed_s=elapsed)
        rng = np.random.default_rng(9)
        new[model] = forecaster.sample_durations(np.ones(n, dtype=int), np.array(["A"] * n, dtype=object),
                                                 np.zeros(n), rng)
        live[model] = np.concatenate([forecaster.sample_durations(jobs.gpus[running], jobs.virtual_cluster[running],
                                                                  elapsed[running], rng) for _ in range(20)])
    # New jobs' durations: the survival model within 10% of the truth, the empirical one well below.
    assert np.median(new["survival"]) == pytest.approx(truth_median, rel=0.1)
    assert np.mean(new["survival"]) == pytest.approx(truth_mean, rel=0.1)
    assert np.median(new["empirical"]) < 0.85 * truth_median
    assert np.mean(new["empirical"]) < 0.7 * truth_mean
    # The running jobs' totals, conditioned on their elapsed time, against their true durations.
    true_live = duration[running]
    assert np.median(live["survival"]) == pytest.approx(np.median(true_live), rel=0.1)
    assert np.mean(live["survival"]) == pytest.approx(np.mean(true_live), rel=0.1)
    assert np.mean(live["empirical"]) < 0.75 * np.mean(true_live)
    assert np.median(live["survival"]) > np.median(live["empirical"])


def test_steady_state_is_not_biased_long(make_workload):
    """Jobs running across the window's start enter the risk set at the age
    they had then: with arrivals for a month and a 2-day window, counting the
    long running jobs from age 0 would draw durations several times too long."""
    median_s, sigma = 6 * HOUR_S, 1.5
    start, duration, finish, elapsed = backlog(seed=10, n=20_000, span_s=30 * DAY_S, median_s=median_s,
                                               sigma=sigma)
    jobs = make_workload(start, 1, duration, "A")
    forecaster = WorkloadForecaster(duration_history_s=2 * DAY_S, duration_model="survival")
    forecaster.fit(jobs, finish, NOW, elapsed_s=elapsed)
    n = 40_000
    drawn = forecaster.sample_durations(np.ones(n, dtype=int), np.array(["A"] * n, dtype=object), np.zeros(n),
                                        np.random.default_rng(11))
    assert np.median(drawn) == pytest.approx(median_s, rel=0.1)
    assert np.mean(drawn) == pytest.approx(median_s * np.exp(sigma ** 2 / 2), rel=0.1)


def test_empirical_is_the_default_and_ignores_elapsed(make_workload):
    start, duration, finish, elapsed = backlog(n=2000)
    jobs = make_workload(start, np.where(np.arange(2000) % 3, 1, 8), duration, np.where(np.arange(2000) % 2, "A", "B"))
    default = WorkloadForecaster().fit(jobs, finish, NOW)
    given = WorkloadForecaster(duration_model="empirical").fit(jobs, finish, NOW, elapsed_s=elapsed)
    assert default.duration_model == "empirical"
    at_least = np.nan_to_num(elapsed[:500])
    futures, totals = [], []
    for forecaster in (default, given):
        futures.append(forecaster.sample(6 * HOUR_S, np.random.default_rng(12)).duration)
        totals.append(forecaster.sample_durations(jobs.gpus[:500], jobs.virtual_cluster[:500], at_least,
                                                  np.random.default_rng(13)))
    np.testing.assert_array_equal(*futures)
    np.testing.assert_array_equal(*totals)


def test_survival_samples_futures_and_tiresias_format(make_workload):
    start, duration, finish, elapsed = backlog(n=3000)
    jobs = make_workload(start, np.where(np.arange(3000) % 4, 1, 4), duration)   # no virtual clusters
    forecaster = WorkloadForecaster(duration_model="survival").fit(jobs, finish, NOW, elapsed_s=elapsed)
    assert forecaster.has_history and forecaster._durations.censored == np.count_nonzero(~np.isnan(elapsed))
    future = forecaster.sample(HOUR_S, np.random.default_rng(14))
    assert len(future) > 0 and future.virtual_cluster is None and np.all(future.duration > 0)
    again = WorkloadForecaster(duration_model="survival").fit(jobs, finish, NOW, elapsed_s=elapsed)
    np.testing.assert_array_equal(again.sample(HOUR_S, np.random.default_rng(14)).duration, future.duration)


def test_only_running_jobs_is_no_history(make_workload):
    jobs = make_workload(NOW - np.arange(1, 11) * 100.0, 1, 1e6, "A")
    forecaster = WorkloadForecaster(duration_model="survival").fit(
        jobs, np.full(10, np.nan), NOW, elapsed_s=np.arange(1, 11) * 50.0)
    assert not forecaster.has_history
    with pytest.raises(ValueError, match="no job finished"):
        forecaster.sample_durations([1], ["A"], [0.0], np.random.default_rng(0))


def test_bad_input(make_workload):
    with pytest.raises(ValueError, match="duration_model must be one of 'empirical', 'survival', got 'km'"):
        WorkloadForecaster(duration_model="km")
    jobs = make_workload(NOW - np.arange(1, 5) * 100.0, 1, 50.0, "A")
    finish = jobs.submit + 50.0
    forecaster = WorkloadForecaster(duration_model="survival")
    with pytest.raises(ValueError, match="one value per job"):
        forecaster.fit(jobs, finish, NOW, elapsed_s=np.zeros(3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        forecaster.fit(jobs, np.full(4, np.nan), NOW, elapsed_s=np.r_[-1.0, 0, 0, 0])
    with pytest.raises(ValueError, match="order of jobs"):
        forecaster.fit(jobs, np.full(4, np.nan), NOW, elapsed_s=np.r_[0, 0, 0, 461.0])
    # Within a minute of the time since submission (clocks of real logs): clipped to it.
    clipped = forecaster.fit(jobs, np.full(4, np.nan), NOW, elapsed_s=np.r_[130.0, 0, 0, 0])
    assert clipped._durations.censored == 1 and not clipped.has_history
