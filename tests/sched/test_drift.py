"""itercast.sched.drift: drifting workloads bootstrapped from a base one."""

import dataclasses

import numpy as np
import pytest

from itercast.sched.drift import (
    DRIFT_KINDS, MAX_SPREAD_S, SCENARIOS, DriftScenario, drift, scenario, shares,
)
from itercast.sim import Workload

WEEK = 7 * 86400.0
START, END = WEEK, 2 * WEEK  # a week of warm-up, then the drifting week
MID = START + 0.5 * WEEK


@pytest.fixture(scope="module")
def base():
    """Two weeks of jobs, 12,000 in the second: a fifth multi-GPU, lognormal durations, two VCs."""
    rng = np.random.default_rng(7)
    n = 18_000
    submit = np.sort(rng.uniform(0, 2 * WEEK, n))
    gpus = np.where(rng.random(n) < 0.2, rng.choice([2, 4, 8], n), 1)
    duration = np.round(rng.lognormal(7, 1.5, n)) + 1
    return Workload(job_ids=np.array([f"j{i}" for i in range(n)], dtype=object), submit=submit, gpus=gpus,
                    durations=duration.reshape(-1, 1),
                    virtual_cluster=rng.choice(np.array(["a", "b"], dtype=object), n),
                    estimates=duration * 1.1)


def part(workload, start, end):
    return workload.window(start, end)


def same_jobs(one, other):
    order_one, order_other = np.argsort(one.job_ids), np.argsort(other.job_ids)
    return (np.array_equal(one.job_ids[order_one], other.job_ids[order_other])
            and np.array_equal(one.submit[order_one], other.submit[order_other])
            and np.array_equal(one.gpus[order_one], other.gpus[order_other])
            and np.array_equal(one.durations[order_one], other.durations[order_other]))


def pairs(workload):
    return set(zip(workload.gpus.tolist(), workload.durations[:, 0].tolist()))


def unchanged_outside_the_drift(base, drifted, point=MID):
    assert same_jobs(part(drifted, None, point), part(base, None, point))
    assert same_jobs(part(drifted, END, None), part(base, END, None))


# ------------------------------------------------------------------ arrival rate

def test_a_rate_step_multiplies_the_arrivals_after_the_drift_point(base):
    drifted = drift(base, START, END, DriftScenario("up", "arrival-rate", 1.5, at=0.5, seed=3))
    n = len(part(base, MID, END))
    count = len(part(drifted, MID, END))
    # each job once, and again with probability 0.5: n + Binomial(n, 0.5)
    assert abs(count - 1.5 * n) <= 4 * np.sqrt(n * 0.25)
    assert count != n
    unchanged_outside_the_drift(base, drifted)
    assert len(set(drifted.job_ids)) == len(drifted)
    assert np.all(np.diff(drifted.submit) >= 0)


def test_an_integer_rate_factor_is_exact_and_copies_are_bootstrapped_from_the_window(base):
    drifted = drift(base, START, END, DriftScenario("x2", "arrival-rate", 2.0, at=0.5, seed=1))
    shifted = part(base, MID, END)
    assert len(part(drifted, MID, END)) == 2 * len(shifted)
    copies = drifted.subset(np.char.find(drifted.job_ids.astype(str), "~d") >= 0)
    assert len(copies) == len(shifted)
    assert pairs(copies) <= pairs(part(base, START, END))  # GPU count and duration drawn together
    # each copy follows its base arrival, before the next base submission and within MAX_SPREAD_S
    origin = {job: t for job, t in zip(base.job_ids, base.submit)}
    after = np.array([origin[job.split("~")[0]] for job in copies.job_ids])
    assert np.all(copies.submit >= after) and np.all(copies.submit - after <= MAX_SPREAD_S)
    assert np.all(copies.submit < END)


def test_a_rate_drop_keeps_each_job_with_the_factor(base):
    drifted = drift(base, START, END, DriftScenario("down", "arrival-rate", 0.5, at=0.5, seed=2))
    n = len(part(base, MID, END))
    kept = part(drifted, MID, END)
    assert abs(len(kept) - 0.5 * n) <= 4 * np.sqrt(n * 0.25)
    assert set(kept.job_ids) <= set(base.job_ids)  # a drop only removes jobs
    unchanged_outside_the_drift(base, drifted)


def test_a_rate_ramp_adds_the_expected_arrivals(base):
    chosen = DriftScenario("ramp", "arrival-rate", 2.0, at=0.0, shape="ramp", seed=4)
    drifted = drift(base, START, END, chosen)
    window = part(base, START, END)
    m = chosen.multiplier(window.submit, START, END)
    fraction = m - np.floor(m)
    assert abs(len(part(drifted, START, END)) - m.sum()) <= 4 * np.sqrt(np.sum(fraction * (1 - fraction)))
    # the second half gains about three times what the first does (mean multipliers 1.25 and 1.75)
    first = len(part(drifted, START, MID)) - len(part(base, START, MID))
    second = len(part(drifted, MID, END)) - len(part(base, MID, END))
    assert 2.5 < second / first < 3.5
    assert same_jobs(part(drifted, None, START), part(base, None, START))


# ------------------------------------------------------------------ GPU-count mix

def test_a_gpu_mix_shift_multiplies_the_multi_gpu_share(base):
    drifted = drift(base, START, END, DriftScenario("multi", "gpu-mix", 2.0, at=0.5, seed=5))
    before, after = part(base, MID, END), part(drifted, MID, END)
    n, q = len(before), float(np.mean(before.gpus > 1))
    assert len(after) == n and np.array_equal(after.submit, before.submit)  # same arrivals
    p = q / (1 - q)  # each single-GPU job switches with this probability
    assert abs(np.sum(after.gpus > 1) - 2 * q * n) <= 4 * np.sqrt(n * (1 - q) * p * (1 - p))
    assert shares(drifted, MID, END)["multi_gpu_share"] == pytest.approx(2 * q, abs=0.02)
    new = after.subset(np.char.find(after.job_ids.astype(str), "~d") >= 0)
    assert len(new) > 0 and np.all(new.gpus > 1)
    assert pairs(new) <= pairs(part(base, START, END))
    unchanged_outside_the_drift(base, drifted)


def test_a_gpu_mix_drop_halves_the_multi_gpu_share(base):
    drifted = drift(base, START, END, DriftScenario("single", "gpu-mix", 0.5, at=0.5, seed=5))
    q = shares(base, MID, END)["multi_gpu_share"]
    assert shares(drifted, MID, END)["multi_gpu_share"] == pytest.approx(q / 2, abs=0.015)
    new = part(drifted, MID, END)
    new = new.subset(np.char.find(new.job_ids.astype(str), "~d") >= 0)
    assert np.all(new.gpus == 1)


# ------------------------------------------------------------------ durations

def test_a_duration_step_scales_exactly_after_the_drift_point(base):
    drifted = drift(base, START, END, DriftScenario("longer", "duration-scale", 1.5, at=0.5, seed=0))
    assert np.array_equal(drifted.job_ids, base.job_ids) and np.array_equal(drifted.gpus, base.gpus)
    after = (base.submit >= MID) & (base.submit < END)
    np.testing.assert_allclose(drifted.durations[after], 1.5 * base.durations[after])
    np.testing.assert_allclose(drifted.estimates[after], 1.5 * base.estimates[after])
    assert np.array_equal(drifted.durations[~after], base.durations[~after])
    assert shares(drifted, MID, END)["gpu_s"] == pytest.approx(1.5 * shares(base, MID, END)["gpu_s"])


def test_a_duration_ramp_scales_by_the_multiplier():
    jobs = Workload(job_ids=np.array(["a", "b", "c", "d"], dtype=object), submit=np.array([0.0, 10.0, 15.0, 20.0]),
                    gpus=np.ones(4, dtype=np.int64), durations=np.full((4, 2), 100.0), gpu_types=("x", "y"))
    chosen = DriftScenario("shorter", "duration-scale", 0.5, at=0.5, shape="ramp")
    drifted = drift(jobs, 0.0, 20.0, chosen)  # drift point 10: x1 at 10, x0.75 at 15; 20 is outside
    np.testing.assert_allclose(drifted.durations[:, 0], [100.0, 100.0, 75.0, 100.0])
    np.testing.assert_allclose(drifted.durations[:, 1], drifted.durations[:, 0])
    np.testing.assert_allclose(chosen.multiplier([0.0, 10.0, 15.0, 20.0], 0.0, 20.0), [1.0, 1.0, 0.75, 0.5])


def test_a_long_tail_shift_multiplies_the_long_jobs_share(base):
    drifted = drift(base, START, END, DriftScenario("tail", "long-tail", 2.0, at=0.5, seed=8))
    threshold = np.percentile(part(base, START, END).duration, 90)
    before, after = part(base, MID, END), part(drifted, MID, END)
    n, q = len(before), float(np.mean(before.duration >= threshold))
    p = q / (1 - q)
    assert len(after) == n
    assert abs(np.sum(after.duration >= threshold) - 2 * q * n) <= 4 * np.sqrt(n * (1 - q) * p * (1 - p))
    assert after.duration.mean() > 1.3 * before.duration.mean()
    unchanged_outside_the_drift(base, drifted)


# ------------------------------------------------------------------ seeds

@pytest.mark.parametrize("kind, factor", [("arrival-rate", 1.5), ("gpu-mix", 2.0), ("long-tail", 2.0)])
def test_a_seed_gives_the_same_drift_and_another_seed_another(base, kind, factor):
    one = drift(base, START, END, DriftScenario("s", kind, factor, seed=11))
    again = drift(base, START, END, DriftScenario("s", kind, factor, seed=11))
    other = drift(base, START, END, DriftScenario("s", kind, factor, seed=12))
    for column in ("job_ids", "submit", "gpus", "durations", "virtual_cluster", "estimates"):
        assert np.array_equal(getattr(one, column), getattr(again, column))
    assert not (len(one) == len(other) and np.array_equal(one.submit, other.submit)
                and np.array_equal(one.durations, other.durations) and np.array_equal(one.job_ids, other.job_ids))


def test_the_duration_scale_uses_no_draw(base):
    one = drift(base, START, END, DriftScenario("d", "duration-scale", 2.0, seed=1))
    other = drift(base, START, END, DriftScenario("d", "duration-scale", 2.0, seed=2))
    assert np.array_equal(one.durations, other.durations)


# ------------------------------------------------------------------ the named scenarios

def test_the_named_scenarios_are_valid_and_distinct(base):
    assert len({each.name for each in SCENARIOS}) == len(SCENARIOS)
    assert {each.kind for each in SCENARIOS} == set(DRIFT_KINDS)
    for each in SCENARIOS:
        assert scenario(each.name) is each and DriftScenario(**each.to_dict()) == each
        assert each.name in each.describe() and f"seed {each.seed}" in each.describe()
        drifted = drift(base, START, END, each)
        assert len(set(drifted.job_ids)) == len(drifted)
        assert same_jobs(part(drifted, None, START), part(base, None, START))


def test_a_philly_window_drifts_with_its_warm_up_untouched(philly):
    jobs, _ = philly
    first = float(jobs.submit.min())
    start = first + 9 * WEEK
    window = jobs.window(start - WEEK, start + WEEK)
    for each in SCENARIOS:
        drifted = drift(window, start, start + WEEK, each)
        assert same_jobs(drifted.window(None, start), window.window(None, start))
        assert drifted.gpus.max() <= window.window(start, start + WEEK).gpus.max()


# ------------------------------------------------------------------ bad parameters

@pytest.mark.parametrize("changes, match", [
    ({"kind": "arrivals"}, "drift kind must be one of"),
    ({"factor": 0.0}, "factor must be a positive finite"),
    ({"factor": -1.0}, "factor must be a positive finite"),
    ({"factor": float("inf")}, "factor must be a positive finite"),
    ({"factor": float("nan")}, "factor must be a positive finite"),
    ({"at": 1.0}, r"drift point 'at' must be a fraction of the window in \[0, 1\)"),
    ({"at": -0.1}, r"drift point 'at' must be a fraction"),
    ({"shape": "wave"}, "drift shape must be one of step, ramp"),
    ({"seed": -1}, "drift seed must be a non-negative integer"),
    ({"seed": 1.5}, "drift seed must be a non-negative integer"),
])
def test_bad_parameters_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        DriftScenario(**{"name": "bad", "kind": "arrival-rate", "factor": 1.5, **changes})


def test_bad_windows_and_impossible_shares_are_refused(base, make_workload):
    up = DriftScenario("up", "arrival-rate", 1.5)
    with pytest.raises(ValueError, match="finite start < end"):
        drift(base, END, START, up)
    with pytest.raises(ValueError, match="no job of .* is submitted in the drift window"):
        drift(base, 3 * WEEK, 4 * WEEK, up)
    q = shares(base, MID, END)["multi_gpu_share"]
    with pytest.raises(ValueError, match="a share must stay below 1"):
        drift(base, START, END, DriftScenario("many", "gpu-mix", 1.01 / q))
    single = make_workload(np.arange(100.0), 1, 50.0)
    with pytest.raises(ValueError, match="no multi-GPU job after the drift point: a share of 0 stays 0"):
        drift(single, 0.0, 100.0, DriftScenario("many", "gpu-mix", 2.0))
    everyone = make_workload(np.arange(100.0), 2, 50.0)
    with pytest.raises(ValueError, match="no job of the base window that is not multi-GPU to draw from"):
        drift(everyone, 0.0, 100.0, DriftScenario("fewer", "gpu-mix", 0.5))
    live = dataclasses.replace(single, running=np.zeros(100, dtype=bool))
    with pytest.raises(ValueError, match="live-cluster state"):
        drift(live, 0.0, 100.0, up)
    with pytest.raises(ValueError, match="no drift scenario 'nope'"):
        scenario("nope")
