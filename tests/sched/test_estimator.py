import numpy as np
import pytest

from itercast.sched.estimator import PHILLY_MEDIAN_DURATION_S, DurationEstimator, known_at
from itercast.sim import WorkloadError

NOW = 100_000.0


def finished_jobs(make_workload, groups):
    """groups: (vc, gpus, durations) -> jobs submitted just before NOW - 1000 s, all finished by NOW."""
    vc, gpus, duration = [], [], []
    for name, count, durations in groups:
        vc += [name] * len(durations)
        gpus += [count] * len(durations)
        duration += list(durations)
    submit = np.full(len(duration), NOW - 1000.0) - np.asarray(duration)
    jobs = make_workload(submit, gpus, duration, vc)
    return jobs, jobs.submit + jobs.duration


def test_falls_back_from_vc_and_gpus_to_gpus_to_all_to_prior(make_workload):
    jobs, finish = finished_jobs(make_workload, [
        ("A", 1, [100, 200, 300, 400, 500]),   # A x 1 GPU: big enough on its own
        ("A", 8, [9000, 9000]),                # too small: falls back to all 8-GPU jobs
        ("B", 8, [3000, 3000, 3000, 3000]),
        ("B", 1, [50]),
    ])
    estimator = DurationEstimator(min_group=5).fit(jobs, finish, NOW)
    everything = np.mean([100, 200, 300, 400, 500, 9000, 9000, 3000, 3000, 3000, 3000, 50])
    estimates = estimator.predict(np.array([1, 8, 8, 1, 4]), np.array(["A", "A", "B", "B", "A"], dtype=object))
    np.testing.assert_allclose(estimates, [
        300,                          # A x 1
        np.mean([9000, 9000, 3000, 3000, 3000, 3000]),  # 8 GPUs
        np.mean([9000, 9000, 3000, 3000, 3000, 3000]),
        np.mean([100, 200, 300, 400, 500, 50]),         # 1 GPU (B x 1 has one job)
        everything,                   # no 4-GPU job at all
    ])
    assert estimator.fitted_jobs == 12
    assert DurationEstimator().predict(np.array([1, 8]), None).tolist() == [PHILLY_MEDIAN_DURATION_S] * 2


def test_unknown_or_missing_virtual_cluster_uses_the_gpu_level(make_workload):
    jobs, finish = finished_jobs(make_workload, [("A", 1, [10] * 5), ("B", 1, [1000] * 5)])
    estimator = DurationEstimator().fit(jobs, finish, NOW)
    assert estimator.predict(np.array([1, 1, 1]), np.array(["A", "B", "new"], dtype=object)).tolist() == [10, 1000, 505]
    assert estimator.predict(np.array([1]), None).tolist() == [505]


def test_tiresias_format_conditions_on_gpus_only(make_workload):
    duration = [100.0] * 5 + [7000.0] * 5
    jobs = make_workload(np.full(10, NOW - 10_000), [1] * 5 + [4] * 5, duration)
    estimator = DurationEstimator(statistic="median").fit(jobs, jobs.submit + jobs.duration, NOW)
    assert estimator.predict(np.array([1, 4, 2]), None).tolist() == [100, 7000, 3550]


def test_statistics(make_workload):
    jobs, finish = finished_jobs(make_workload, [("A", 1, [10, 10, 10, 1000, 100_000])])
    predict = {statistic: DurationEstimator(statistic=statistic).fit(jobs, finish, NOW).predict(np.array([1]), None)[0]
               for statistic in ("mean", "median", "geomean")}
    assert predict["median"] == 10
    assert predict["mean"] == pytest.approx(101_030 / 5)
    assert predict["geomean"] == pytest.approx(np.exp(np.mean(np.log([10, 10, 10, 1000, 100_000]))))
    with pytest.raises(ValueError, match="statistic"):
        DurationEstimator(statistic="mode")


def test_uses_only_durations_known_at_now(make_workload):
    # Jobs 0-4 finished in the window; 5 still runs; 6 finishes after now; 7 is submitted after now;
    # 8 finished before the window began.
    submit = [NOW - 5000] * 5 + [NOW - 100, NOW - 200, NOW + 10, NOW - 200_000]
    duration = np.array([100.0, 100, 100, 100, 100, 9e5, 9e5, 9e5, 9e5])
    jobs = make_workload(submit, 1, duration, "A")
    finish = jobs.submit + duration
    finish[5] = np.nan
    before = DurationEstimator().fit(jobs, finish, NOW)
    assert before.fitted_jobs == 5
    changed = make_workload(submit, 1, np.r_[duration[:5], 1.0, 2.0, 3.0, 9e5], "A")
    after = DurationEstimator().fit(changed, finish, NOW)
    assert before.predict(np.array([1]), None) == after.predict(np.array([1]), None) == 100


def test_known_at_hides_the_future(make_workload):
    jobs = make_workload([0.0, 10.0, 50.0], 1, [5.0, 100.0, 1.0])
    known = known_at(jobs, jobs.submit + jobs.duration, now=20.0)
    assert known.submit.tolist() == [0.0, 10.0]
    assert known.duration[0] == 5.0 and np.isnan(known.duration[1]) and np.isnan(known.finish[1])


def test_bad_input(make_workload):
    jobs = make_workload([0.0, 10.0], 1, [5.0, 5.0], "A")
    with pytest.raises(WorkloadError, match="one finish time per job"):
        DurationEstimator().fit(jobs, np.array([5.0]), 100.0)
    with pytest.raises(WorkloadError, match="finishes before it is submitted"):
        DurationEstimator().fit(jobs, np.array([5.0, 9.0]), 100.0)
    with pytest.raises(WorkloadError, match="rows"):
        DurationEstimator().predict(np.array([1, 2]), np.array(["A"], dtype=object))
    with pytest.raises(ValueError, match="history_s"):
        DurationEstimator(history_s=-1)
    with pytest.raises(ValueError, match="now"):
        DurationEstimator().fit(jobs, jobs.submit + 5, np.nan)


def test_philly_day_gives_positive_finite_estimates(philly):
    jobs, finish = philly
    now = np.quantile(jobs.submit, 0.5)
    estimator = DurationEstimator().fit(jobs, finish, now)
    assert estimator.fitted_jobs > 100
    estimates = estimator.predict(jobs.gpus, jobs.virtual_cluster)
    assert np.all(np.isfinite(estimates)) and np.all(estimates > 0)
