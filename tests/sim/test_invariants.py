"""Invariants every policy must keep on the real Philly trace: the whole trace
on a Philly-sized cluster (which rarely queues) and one busy week on a small
cluster (which queues and preempts a lot)."""

import dataclasses

import numpy as np
import pytest

from itercast.sim import DEADLINE_POLICIES, POLICIES, Cluster, SimConfig, load_workload, simulate
from itercast.sim.loaders import parse_time
from shared_data import vendored


@pytest.fixture(scope="module")
def philly(shared):
    return load_workload(shared / "workloads" / "philly_jobs.csv")


@pytest.fixture(scope="module")
def philly_week():
    """The vendored slice of the Philly trace around 2017-10-01 to 2017-10-08: that week's jobs, all of them."""
    return load_workload(vendored("workloads/philly_2017-10-01_week.csv"))


def check_invariants(result):
    workload, cluster, config = result.workload, result.cluster, result.config
    seg = result.segments
    gpus = workload.gpus
    (pool,) = cluster.pools

    # Every job finishes, no job starts before it is submitted, JCT >= duration.
    assert np.isfinite(result.finish).all()
    assert (result.first_start >= workload.submit).all()
    assert (result.jct >= workload.duration * (1 - 1e-12)).all()

    # Each stay on GPUs holds exactly the job's GPU count, on the fewest
    # nodes when consolidated; a job's stays never overlap in time.
    slices_gpus = np.add.reduceat(seg["slice_gpus"], seg["slice_offset"][:-1])
    assert (slices_gpus == gpus[seg["job"]]).all()
    if config.placement == "consolidated":
        nodes_used = np.diff(seg["slice_offset"])
        assert (nodes_used == -(-gpus[seg["job"]] // pool.gpus_per_node)).all()
    order = np.lexsort((seg["start"], seg["job"]))
    same_job = seg["job"][order][1:] == seg["job"][order][:-1]
    assert (seg["start"][order][1:][same_job] >= seg["end"][order][:-1][same_job]).all()
    assert np.allclose(np.maximum.reduceat(seg["end"][order], _group_starts(seg["job"][order])),
                       result.finish[np.unique(seg["job"])])

    # No node ever holds more GPUs than it has: sweep +gpus at each slice's
    # start and -gpus at its end, releases before acquisitions at equal times.
    per_slice = np.repeat(np.arange(len(seg["job"])), np.diff(seg["slice_offset"]))
    node, count = seg["slice_node"], seg["slice_gpus"]
    times = np.concatenate([seg["start"][per_slice], seg["end"][per_slice]])
    deltas = np.concatenate([count, -count])
    nodes = np.concatenate([node, node])
    occupancy = np.cumsum(deltas[np.lexsort((deltas, times, nodes))])
    assert occupancy.min() >= 0 and occupancy.max() <= pool.gpus_per_node, "a node holds more GPUs than it has"

    # Work is conserved: every job holds GPUs for its duration plus at most one
    # restart overhead per preemption (exactly its duration if never preempted),
    # and the busy GPU-seconds are the stays' lengths times the GPU count.
    held = np.bincount(seg["job"], weights=seg["end"] - seg["start"], minlength=len(workload))
    overhead_cap = result.preemptions * config.restart_overhead_s
    assert np.allclose(result.busy_gpu_s, held * gpus)
    assert (held >= workload.duration - 1e-6).all()
    assert (held <= workload.duration + overhead_cap + 1e-6).all()
    never_preempted = result.preemptions == 0
    assert np.allclose(held[never_preempted], workload.duration[never_preempted])


def for_policy(workload, policy):
    """Deadline policies need deadlines: twice each job's duration after its submission."""
    if policy not in DEADLINE_POLICIES:
        return workload
    return dataclasses.replace(workload, deadlines=workload.submit + 2 * workload.duration)


def _group_starts(sorted_ids):
    return np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])


@pytest.mark.parametrize("policy", POLICIES)
def test_full_philly_on_a_philly_sized_cluster(philly, policy):
    result = simulate(for_policy(philly, policy), Cluster.homogeneous(2048, 8), SimConfig(policy=policy),
                      record_segments=True)
    check_invariants(result)
    # 2,048 GPUs are about five times the trace's mean demand; no job ever waits.
    assert result.summary()["avg_queue_s"] == 0


@pytest.mark.parametrize("placement", ["consolidated", "spread"])
@pytest.mark.parametrize("policy", POLICIES)
def test_a_busy_week_on_a_small_cluster(philly_week, policy, placement):
    week = for_policy(philly_week.window(parse_time("2017-10-01"), parse_time("2017-10-08")), policy)
    config = SimConfig(policy=policy, placement=placement, lease_s=600, starvation_factor=2.0)
    result = simulate(week, Cluster.homogeneous(128, 8), config, record_segments=True)
    check_invariants(result)
    assert result.summary()["avg_queue_s"] > 0
    if config.preemptive:
        assert result.preemptions.sum() > 0


def test_the_checker_catches_an_over_allocated_node(make_jobs, run_sim):
    # Two 1-GPU jobs on a 1-GPU node run back to back; pretend the second
    # started while the first still held the GPU.
    result, _ = run_sim(make_jobs(("A", 0, 1, 10), ("B", 0, 1, 10)), 1, 1, policy="fifo")
    check_invariants(result)
    result.segments["start"][1] = 5.0
    with pytest.raises(AssertionError, match="a node holds more GPUs than it has"):
        check_invariants(result)
