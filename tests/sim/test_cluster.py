"""Placement, GPU types, live-state starts and mid-run reconfiguration."""

import numpy as np
import pytest

from itercast.sim import (Cluster, GpuPool, JobSpec, SimConfig, SimConfigError, Simulation,
                          UnschedulableJobError, Workload, simulate)


def nodes_of(result, job_index):
    """{node: gpus} of each stay of a job on GPUs."""
    seg = result.segments
    stays = []
    for i in np.flatnonzero(seg["job"] == job_index):
        lo, hi = seg["slice_offset"][i], seg["slice_offset"][i + 1]
        stays.append(dict(zip(seg["slice_node"][lo:hi].tolist(), seg["slice_gpus"][lo:hi].tolist())))
    return stays


# Three nodes of 4 GPUs. A(0, 3 GPUs, 100 s), B(0, 3 GPUs, 100 s), E(10, 6 GPUs, 50 s).
FRAGMENTING_JOBS = [("A", 0, 3, 100), ("B", 0, 3, 100), ("E", 10, 6, 50)]


def test_consolidated_waits_for_the_fewest_nodes(make_jobs, run_sim):
    # A and B take 3 GPUs on two different nodes: free GPUs per node 1, 1, 4.
    # E needs 6 GPUs = 2 nodes; the two emptiest hold 4 + 1 = 5 < 6, so E waits
    # for A and B: E 100-150, JCT 140, on exactly two nodes.
    result, jct = run_sim(make_jobs(*FRAGMENTING_JOBS), 3, 4, placement="consolidated")
    assert jct == {"A": 100, "B": 100, "E": 140}
    assert [len(stay) for stay in nodes_of(result, 2)] == [2]
    assert sorted(nodes_of(result, 2)[0].values()) == [2, 4]


def test_spread_takes_any_free_gpus(make_jobs, run_sim):
    # A and B each take one GPU on every node (2 free on each); E takes 2 + 2 + 2
    # at t=10: JCT 50.
    result, jct = run_sim(make_jobs(*FRAGMENTING_JOBS), 3, 4, placement="spread")
    assert jct == {"A": 100, "B": 100, "E": 50}
    assert nodes_of(result, 0) == [{0: 1, 1: 1, 2: 1}]
    assert nodes_of(result, 2) == [{0: 2, 1: 2, 2: 2}]


def test_single_node_jobs_get_one_node_best_fit(make_jobs, run_sim):
    # Two nodes of 4. A(2 GPUs) lands on some node; B(2 GPUs) best-fits next to
    # it, leaving a whole node for C(4 GPUs): all three start at 0.
    result, jct = run_sim(make_jobs(("A", 0, 2, 10), ("B", 0, 2, 10), ("C", 0, 4, 10)), 2, 4)
    assert jct == {"A": 10, "B": 10, "C": 10}
    (a,), (b,), (c,) = (nodes_of(result, i) for i in range(3))
    assert a.keys() == b.keys() and a.keys() != c.keys() and c == {list(c)[0]: 4}


def test_jobs_larger_than_a_node_span_whole_nodes(make_jobs, run_sim):
    result, jct = run_sim(make_jobs(("A", 0, 8, 10)), 4, 4)
    assert jct == {"A": 10}
    assert sorted(nodes_of(result, 0)[0].values()) == [4, 4]


def test_a_job_that_can_never_fit_is_an_error_naming_it(make_jobs, run_sim):
    with pytest.raises(UnschedulableJobError, match="job big needs 16 GPUs"):
        run_sim(make_jobs(("ok", 0, 1, 10), ("big", 5, 16, 10)), 1, 8)


def two_type_cluster():
    return Cluster((GpuPool("V100", 1, 1), GpuPool("K80", 1, 1)))


def test_jobs_take_the_fastest_free_gpu_type():
    # A and B both prefer V100; A (first) gets it, B runs on the K80 at once
    # rather than wait: A 0-100 on V100, B 0-200 on K80. C runs only on K80
    # (iterations x time: 50 x 1 s) and waits for B: C 200-250, JCT 240.
    workload = Workload.from_jobs([
        JobSpec("A", 0, 1, duration_s={"V100": 100, "K80": 300}),
        JobSpec("B", 0, 1, duration_s={"V100": 100, "K80": 200}),
        JobSpec("C", 10, 1, iterations=50, iteration_time_s={"K80": 1.0}),
    ])
    result = simulate(workload, two_type_cluster(), SimConfig(policy="fifo"), record_segments=True)
    assert (result.finish - workload.submit).tolist() == [100, 200, 240]
    assert result.segments["pool"].tolist() == [0, 1, 1]


def test_a_preempted_job_resumes_on_another_type_with_its_progress():
    # SRTF, lease 0, no overhead. A(0) runs on V100 (100 s; K80 would take 200).
    # B(40, V100 only, 10 s) preempts A at 40 (60% of A's work left). The K80
    # is free, so A resumes there at once: 60% of 200 s = 120 s: A 40-160.
    workload = Workload.from_jobs([
        JobSpec("A", 0, 1, duration_s={"V100": 100, "K80": 200}),
        JobSpec("B", 40, 1, duration_s={"V100": 10}),
    ])
    config = SimConfig(policy="srtf", lease_s=0, restart_overhead_s=0)
    result = simulate(workload, two_type_cluster(), config)
    assert result.finish.tolist() == pytest.approx([160, 50])


def test_start_from_a_live_cluster_state(make_jobs):
    # The clock starts at 1000. A (submitted 900, 100 s) already runs with half
    # its work done and 50 GPU-s attained; B (submitted 950, 10 s) is queued.
    # LAS with no lease: B (0 GPU-s) preempts A at 1000; B 1000-1010; A resumes
    # its last 50 s: 1010-1060. JCT: A 160, B 60.
    workload = make_jobs(("A", 900, 1, 100), ("B", 950, 1, 10))
    live = Workload(**{**vars(workload), "attained_gpu_s": np.array([50.0, 0.0]),
                       "done_fraction": np.array([0.5, 0.0]), "running": np.array([True, False])})
    config = SimConfig(policy="las", lease_s=0, restart_overhead_s=0)
    result = simulate(live, Cluster.homogeneous(1, 1), config, start_time=1000)
    assert (result.finish - live.submit).tolist() == [160, 60]
    # FIFO keeps A running: A done at 1050, B 1050-1060.
    result = simulate(live, Cluster.homogeneous(1, 1), SimConfig(policy="fifo"), start_time=1000)
    assert (result.finish - live.submit).tolist() == [150, 110]


def test_configuration_can_be_swapped_mid_run(make_jobs):
    # One GPU. A(0, 100 s), B(10, 50 s) under FIFO: B would wait until 100.
    # At t=20 switch to SRTF (no lease, no overhead): A has 80 s left > 50, so
    # B runs 20-70 and A finishes its 80 s at 70-150. JCT: A 150, B 60.
    workload = make_jobs(("A", 0, 1, 100), ("B", 10, 1, 50))
    simulation = Simulation(workload, Cluster.homogeneous(1, 1), SimConfig(policy="fifo"))
    assert simulation.run(until=20) is False
    assert simulation.now == 20
    simulation.set_config(SimConfig(policy="srtf", lease_s=0, restart_overhead_s=0))
    assert simulation.run() is True
    result = simulation.result()
    assert (result.finish - workload.submit).tolist() == [150, 60]
    with pytest.raises(SimConfigError, match="estimate"):
        simulation.set_config(SimConfig(policy="sjf", estimate="noisy"))
