"""Snapshots of a running simulation, event budgets and refitted estimates:
what an online tuner builds on."""

import dataclasses

import numpy as np
import pytest

from itercast.sim import Cluster, JobSpec, SimConfig, SimConfigError, Simulation, Workload, WorkloadError, simulate

CONFIGS = [
    SimConfig(policy="fifo"),
    SimConfig(policy="sjf", backfill=False),
    SimConfig(policy="qssf", placement="spread"),
    SimConfig(policy="srtf", lease_s=60, restart_overhead_s=20),
    SimConfig(policy="las"),
    SimConfig(policy="las", lease_s=0, restart_overhead_s=0),
    SimConfig(policy="tiresias"),
    SimConfig(policy="tiresias", queues=4, queue_limits_gpu_s=(500, 2000, 9000), starvation_factor=1.5,
              placement="spread", lease_s=120),
]


def random_workload(n=400, seed=0, horizon=40_000):
    """Whole-second submissions and durations, as in the Philly trace, 1-16 GPUs."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, horizon, n)).astype(float)
    gpus = rng.choice([1, 1, 1, 2, 4, 8, 16], n)
    duration = np.maximum(1, np.round(np.exp(rng.normal(6.5, 1.6, n))))
    return Workload.from_jobs(JobSpec(f"j{i}", submit[i], int(gpus[i]), duration_s=duration[i],
                                      virtual_cluster=f"vc{i % 3}") for i in range(n))


def continue_from_snapshot(workload, cluster, config, at, include_future=True):
    simulation = Simulation(workload, cluster, config)
    simulation.run(until=at)
    snapshot = simulation.snapshot(include_future=include_future)
    rest = Simulation(snapshot, cluster, dataclasses.replace(config, estimate="supplied"), start_time=at)
    rest.run()
    return snapshot, rest.result()


def finish_by_id(workload, result):
    return dict(zip(workload.job_ids, result.finish))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.policy}-{c.placement}-{c.lease_s:g}")
@pytest.mark.parametrize("at", [5_000.0, 17_777.0, 31_000.5])
def test_a_snapshot_continues_the_simulation_exactly(config, at):
    workload, cluster = random_workload(), Cluster.homogeneous(32, 8)
    expected = finish_by_id(workload, simulate(workload, cluster, config))
    snapshot, result = continue_from_snapshot(workload, cluster, config, at)
    assert 0 < len(snapshot) < len(workload)
    assert snapshot.running.any() and np.isfinite(snapshot.pending_since_s).any()
    finished = finish_by_id(snapshot, result)
    assert finished == {job: expected[job] for job in snapshot.job_ids}


def test_a_live_snapshot_plus_the_jobs_to_come_is_the_whole_snapshot():
    workload, cluster, config = random_workload(seed=3), Cluster.homogeneous(32, 8), CONFIGS[-1]
    simulation = Simulation(workload, cluster, config)
    simulation.run(until=20_000)
    live = simulation.snapshot()
    assert (live.submit <= 20_000).all()
    to_come = workload.window(start=20_000.5)
    joined = Workload.concat([live, to_come])
    rest = simulate(joined, cluster, dataclasses.replace(config, estimate="oracle"), start_time=20_000)
    expected = finish_by_id(workload, simulate(workload, cluster, config))
    assert finish_by_id(joined, rest) == {job: expected[job] for job in joined.job_ids}


def test_snapshot_columns_describe_the_live_cluster(make_jobs):
    # One 2-GPU node, no overhead. A(0, 100 s, 2 GPUs) runs; B(10, 50 s) waits.
    workload = make_jobs(("A", 0, 2, 100), ("B", 10, 1, 50), ("C", 500, 1, 10))
    simulation = Simulation(workload, Cluster.homogeneous(2, 2), SimConfig(policy="fifo", restart_overhead_s=0))
    simulation.run(until=40)
    snap = simulation.snapshot()
    assert snap.job_ids.tolist() == ["A", "B"]
    assert snap.running.tolist() == [True, False]
    assert snap.attained_gpu_s.tolist() == [80.0, 0.0]
    assert snap.done_fraction.tolist() == [0.4, 0.0]
    assert snap.remaining_s.tolist() == [60.0, 50.0]
    assert snap.placement[0] == (("gpu", 0, 2),) and snap.placement[1] == ()
    assert snap.pending_since_s[1] == 10 and np.isnan(snap.pending_since_s[0])
    assert snap.last_start_s[0] == 0 and snap.first_start_s[0] == 0
    assert len(simulation.snapshot(include_future=True)) == 3


def test_tiresias_queue_state_survives_a_snapshot(make_jobs):
    # Tiresias, limit 100 GPU-s, one GPU, no lease: A (0, 300 s) is demoted at
    # 100; B (150, 50 s) arrives in queue 0 and preempts it.
    workload = make_jobs(("A", 0, 1, 300), ("B", 150, 1, 50))
    config = SimConfig(policy="tiresias", queue_limits_gpu_s=(100,), lease_s=0, restart_overhead_s=0)
    simulation = Simulation(workload, Cluster.homogeneous(1, 1), config)
    simulation.run(until=160)
    snap = simulation.snapshot()
    assert snap.tiresias_queue.tolist() == [1, 0]
    assert snap.service_since_promotion_gpu_s.tolist() == [150.0, 10.0]
    assert snap.running.tolist() == [False, True]


def placements(*jobs):
    column = np.empty(len(jobs), dtype=object)
    column[:] = jobs
    return column


def test_a_running_job_on_gpus_that_are_taken_is_an_error(make_jobs):
    workload = make_jobs(("A", 0, 1, 100), ("B", 0, 1, 100))
    placed = dataclasses.replace(workload, running=np.array([True, True]),
                                 placement=placements((("gpu", 0, 1),), (("gpu", 0, 1),)))
    with pytest.raises(WorkloadError, match="job B does not fit the cluster at the start"):
        Simulation(placed, Cluster.homogeneous(1, 1))
    elsewhere = dataclasses.replace(placed, placement=placements((("K80", 0, 1),), ()))
    with pytest.raises(WorkloadError, match="GPU type 'K80'"):
        Simulation(elsewhere, Cluster.homogeneous(2, 2))


def test_an_event_budget_stops_a_thrashing_configuration():
    workload, cluster = random_workload(n=300, seed=1), Cluster.homogeneous(16, 8)
    thrashing = SimConfig(policy="las", lease_s=0, restart_overhead_s=0)
    simulation = Simulation(workload, cluster, thrashing)
    assert simulation.run(max_events=500) is False
    assert simulation.budget_exhausted
    assert simulation.result().events <= 500
    unlimited = Simulation(workload, cluster, thrashing)
    assert unlimited.run() is True and not unlimited.budget_exhausted
    assert unlimited.result().events > 500


def test_refitted_estimates_reorder_the_queue(make_jobs):
    # One GPU; A runs 0-100; B (100 s) and C (10 s) wait. SJF by supplied
    # estimates (B 5, C 50) would run B first; new estimates at t=50 flip it.
    workload = make_jobs(("A", 0, 1, 100, 1), ("B", 1, 1, 100, 5), ("C", 2, 1, 10, 50))
    simulation = Simulation(workload, Cluster.homogeneous(1, 1), SimConfig(policy="sjf", estimate="supplied"))
    simulation.run(until=50)
    simulation.set_estimates(np.array([1.0, 100.0, 10.0]))
    simulation.run()
    assert simulation.result().finish.tolist() == [100, 210, 110]
    with pytest.raises(SimConfigError, match="positive, finite"):
        simulation.set_estimates(np.array([1.0, np.nan, 1.0]))


def test_concat_fills_columns_a_part_lacks(make_jobs):
    live = dataclasses.replace(make_jobs(("A", 0, 1, 100, 7)), attained_gpu_s=np.array([5.0]),
                               pending_since_s=np.array([3.0]))
    fresh = make_jobs(("B", 9, 2, 10))
    joined = Workload.concat([live, fresh])
    assert joined.job_ids.tolist() == ["A", "B"]
    assert joined.attained_gpu_s.tolist() == [5.0, 0.0]
    assert joined.pending_since_s[0] == 3.0 and np.isnan(joined.pending_since_s[1])
    assert joined.estimates is None  # B has none: no estimate column at all
    with pytest.raises(WorkloadError, match="nothing"):
        Workload.concat([])
