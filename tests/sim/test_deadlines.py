"""EDF and LST: jobs ranked by their deadlines, and the tardiness they leave."""

import dataclasses

import numpy as np
import pytest

from itercast.sim import Cluster, JobSpec, SimConfig, Simulation, Workload, load_workload, simulate
from itercast.sim.errors import SimConfigError

ONE_NODE = Cluster.homogeneous(8, 8)


def queued_behind_a_long_job(deadlines, estimates=None):
    """Job a holds the whole cluster until t=100; b (50 s) and c (10 s) wait for it."""
    jobs = Workload.from_jobs([JobSpec("a", submit_s=0, gpus=8, duration_s=100),
                               JobSpec("b", submit_s=1, gpus=8, duration_s=50),
                               JobSpec("c", submit_s=2, gpus=8, duration_s=10)])
    estimates = jobs.duration if estimates is None else np.asarray(estimates, float)
    return dataclasses.replace(jobs, deadlines=np.asarray(deadlines, float), estimates=estimates)


def finish_order(workload, policy):
    result = simulate(workload, ONE_NODE, SimConfig(policy=policy, estimate="supplied"))
    return list(workload.job_ids[np.argsort(result.finish)])


def test_edf_runs_the_earliest_deadline_first_and_lst_the_least_slack():
    # b: deadline 200, 50 s left -> must start by 150; c: deadline 190, 10 s -> by 180
    workload = queued_behind_a_long_job([1000, 200, 190])
    assert finish_order(workload, "edf") == ["a", "c", "b"]
    assert finish_order(workload, "lst") == ["a", "b", "c"]
    assert finish_order(workload, "fifo") == ["a", "b", "c"]


def test_lst_ranks_by_the_estimates_it_is_given_not_the_true_durations():
    workload = queued_behind_a_long_job([1000, 200, 190], estimates=[100, 5, 10])
    assert finish_order(workload, "lst") == ["a", "c", "b"]


def test_a_job_without_a_deadline_goes_after_those_with_one():
    workload = queued_behind_a_long_job([np.nan, np.nan, 500])
    assert finish_order(workload, "edf") == ["a", "c", "b"]


def test_tardiness_counts_late_jobs_and_their_lateness():
    workload = queued_behind_a_long_job([1000, 200, 150])
    summary = simulate(workload, ONE_NODE, SimConfig(policy="edf", estimate="supplied")).summary()
    # c finishes at 110 (on time), b at 160 (on time), a at 100: none late; FIFO: c at 160, 10 s late
    assert summary["late_jobs"] == 0 and summary["mean_lateness_s"] == 0
    fifo = simulate(workload, ONE_NODE, SimConfig(policy="fifo")).summary()
    assert fifo["late_jobs"] == 1 and fifo["late_fraction"] == pytest.approx(1 / 3)
    assert fifo["mean_lateness_s"] == pytest.approx(10 / 3) and fifo["mean_lateness_of_late_s"] == pytest.approx(10)


def test_no_tardiness_keys_without_deadlines():
    jobs = queued_behind_a_long_job([1, 2, 3])
    summary = simulate(dataclasses.replace(jobs, deadlines=None), ONE_NODE, SimConfig()).summary()
    assert "late_jobs" not in summary


def test_deadline_policies_need_deadlines():
    jobs = dataclasses.replace(queued_behind_a_long_job([1, 2, 3]), deadlines=None)
    with pytest.raises(SimConfigError, match="deadline"):
        Simulation(jobs, ONE_NODE, SimConfig(policy="edf"))
    simulation = Simulation(jobs, ONE_NODE, SimConfig(policy="fifo"))
    with pytest.raises(SimConfigError, match="deadline"):
        simulation.set_config(SimConfig(policy="lst"))


def test_a_snapshot_keeps_the_deadlines_and_its_continuation_is_exact():
    rng = np.random.default_rng(3)
    n = 60
    jobs = Workload.from_jobs([JobSpec(f"j{i}", submit_s=float(s), gpus=int(g), duration_s=float(d))
                               for i, (s, g, d) in enumerate(zip(np.sort(rng.uniform(0, 2000, n)),
                                                                 rng.choice([1, 2, 4, 8], n),
                                                                 rng.uniform(50, 900, n)))])
    workload = dataclasses.replace(jobs, deadlines=jobs.submit + rng.uniform(1, 4, n) * jobs.duration)
    cluster = Cluster.homogeneous(16, 8)
    config = SimConfig(policy="lst", estimate="oracle")
    whole = simulate(workload, cluster, config)
    simulation = Simulation(workload, cluster, config)
    simulation.run(until=900.0)
    snap = simulation.snapshot(include_future=True)
    assert np.array_equal(snap.deadlines, workload.deadlines[np.isin(workload.job_ids, snap.job_ids)])
    rest = Simulation(snap, cluster, dataclasses.replace(config, estimate="supplied"), start_time=simulation.now)
    rest.run()
    finish = dict(zip(snap.job_ids, rest.result().finish))
    assert all(finish[job] == pytest.approx(whole.finish[i]) for i, job in enumerate(workload.job_ids) if job in finish)


def test_the_loader_reads_a_deadline_column(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,num_gpu,submit_time,duration,deadline\n1,1,0,10,100\n2,1,5,10,\n")
    workload = load_workload(path)
    assert workload.deadlines[0] == 100 and np.isnan(workload.deadlines[1])
