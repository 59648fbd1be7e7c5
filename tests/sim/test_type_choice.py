"""Which GPU type a job tries first on a heterogeneous cluster: its true fastest, its estimated
fastest, or the cluster's order whatever the job."""

import dataclasses

import numpy as np
import pytest

from itercast.sim import Cluster, GpuPool, JobSpec, SimConfig, Simulation, Workload, simulate
from itercast.sim.errors import SimConfigError, WorkloadError

# pool order: the slow type first, so that a type-blind choice lands there
CLUSTER = Cluster((GpuPool("slow", 1, 8), GpuPool("fast", 1, 8)))


def one_job(estimates):
    jobs = Workload.from_jobs([JobSpec("x", submit_s=0, gpus=8, duration_s={"slow": 300.0, "fast": 100.0})])
    return dataclasses.replace(jobs, type_estimates=np.array([[estimates[t] for t in jobs.gpu_types]]))


@pytest.mark.parametrize("choice, estimates, finish", [
    ("fastest", {"slow": 1.0, "fast": 9.0}, 100.0),    # true run times, estimates ignored
    ("estimated", {"slow": 1.0, "fast": 9.0}, 300.0),  # a wrong estimate sends it to the slow type
    ("estimated", {"slow": 9.0, "fast": 1.0}, 100.0),
])
def test_the_job_starts_on_the_type_its_choice_names(choice, estimates, finish):
    result = simulate(one_job(estimates), CLUSTER, SimConfig(gpu_type_choice=choice))
    assert result.finish[0] == finish


def test_a_type_blind_choice_ignores_speed_and_spreads_jobs_over_the_types():
    specs = [JobSpec(f"job-{i}", submit_s=0, gpus=1, duration_s={"slow": 300.0, "fast": 100.0}) for i in range(40)]
    jobs = Workload.from_jobs(specs)
    roomy = Cluster((GpuPool("slow", 5, 8), GpuPool("fast", 5, 8)))
    finish = simulate(jobs, roomy, SimConfig(gpu_type_choice="blind")).finish
    assert 10 < (finish == 300.0).sum() < 30 and (finish == 100.0).sum() + (finish == 300.0).sum() == 40
    assert np.array_equal(finish, simulate(jobs, roomy, SimConfig(gpu_type_choice="blind")).finish)
    assert (simulate(jobs, roomy, SimConfig()).finish == 100.0).all()


def test_estimated_choice_needs_per_type_estimates():
    jobs = dataclasses.replace(one_job({"slow": 1, "fast": 1}), type_estimates=None)
    with pytest.raises(SimConfigError, match="type_estimates"):
        Simulation(jobs, CLUSTER, SimConfig(gpu_type_choice="estimated"))
    with pytest.raises(SimConfigError, match="cannot change"):
        Simulation(jobs, CLUSTER, SimConfig()).set_config(SimConfig(gpu_type_choice="blind"))


def test_type_estimates_must_match_the_durations_shape():
    with pytest.raises(WorkloadError, match="type_estimates has shape"):
        dataclasses.replace(one_job({"slow": 1, "fast": 1}), type_estimates=np.ones((1, 3)))


def test_an_estimated_choice_continues_exactly_from_a_snapshot():
    rng = np.random.default_rng(5)
    n = 80
    specs = [JobSpec(f"j{i}", submit_s=float(s), gpus=int(g), duration_s={"slow": float(d * r), "fast": float(d)})
             for i, (s, g, d, r) in enumerate(zip(np.sort(rng.uniform(0, 3000, n)), rng.choice([1, 2, 4, 8], n),
                                                  rng.uniform(60, 1200, n), rng.uniform(1.2, 3.0, n)))]
    jobs = Workload.from_jobs(specs)
    noisy = jobs.durations.copy()
    swapped = rng.random(n) < 0.4  # these jobs believe the slow type is the fast one
    noisy[swapped] = noisy[swapped][:, ::-1]
    workload = dataclasses.replace(jobs, type_estimates=noisy)
    config = SimConfig(policy="srtf", gpu_type_choice="estimated")
    whole = simulate(workload, CLUSTER, config)
    simulation = Simulation(workload, CLUSTER, config)
    simulation.run(until=1500.0)
    snap = simulation.snapshot(include_future=True)
    rest = Simulation(snap, CLUSTER, dataclasses.replace(config, estimate="supplied"), start_time=simulation.now)
    rest.run()
    finish = dict(zip(snap.job_ids, rest.result().finish))
    assert len(finish) > 10
    assert all(finish[job] == pytest.approx(whole.finish[i]) for i, job in enumerate(workload.job_ids) if job in finish)
    # and the choice mattered: the oracle choice finishes the jobs differently
    assert not np.allclose(simulate(jobs, CLUSTER, SimConfig(policy="srtf")).finish, whole.finish)


def test_concat_puts_each_parts_type_estimates_under_its_types():
    a = one_job({"slow": 3.0, "fast": 1.0})
    b = Workload.from_jobs([JobSpec("y", submit_s=0, gpus=1, duration_s={"fast": 50.0})])
    b = dataclasses.replace(b, type_estimates=np.array([[40.0]]))
    joined = Workload.concat([b, a])
    assert joined.gpu_types == ("fast", "slow")
    assert joined.type_estimates.tolist() == [[40.0, np.inf], [1.0, 3.0]]


def test_concat_places_a_part_without_type_estimates_by_its_durations():
    a = one_job({"slow": 3.0, "fast": 1.0})
    b = Workload.from_jobs([JobSpec("y", submit_s=0, gpus=1, duration_s={"slow": 70.0, "fast": 50.0})])
    joined = Workload.concat([a, b])
    assert joined.type_estimates.tolist() == [[3.0, 1.0], [70.0, 50.0]]
