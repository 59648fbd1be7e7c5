"""Full Philly replay (82,247 jobs) per policy.

    PYTHONPATH=python python3 -m pytest benchmarks/bench_sim.py --benchmark-enable

`philly_2048` is the issue's target: a Philly-sized cluster (256 nodes x 8 GPUs),
<= 10 s per policy. On it the trace never queues, so `philly_256` (32 x 8)
replays the same jobs on a cluster that queues and preempts heavily.
Each benchmark's extra_info carries events, events/s and jobs/s of the
simulation itself (loading the CSV is excluded).
"""

import os
from pathlib import Path

import pytest

from itercast.sim import POLICIES, Cluster, SimConfig, Simulation, load_workload

SHARED = Path(os.environ.get("ITERCAST_SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture(scope="module")
def philly():
    return load_workload(SHARED / "workloads" / "philly_jobs.csv")


def replay(benchmark, workload, gpus, policy):
    cluster, config = Cluster.homogeneous(gpus, 8), SimConfig(policy=policy)
    simulations = []

    def run():
        simulation = Simulation(workload, cluster, config)
        simulation.run()
        simulations.append(simulation)

    benchmark.pedantic(run, rounds=3, iterations=1)
    fastest = min(simulations, key=lambda simulation: simulation.wall_s)
    summary = fastest.result().summary()
    assert summary["jobs"] == len(workload)
    benchmark.extra_info.update({key: summary[key] for key in (
        "events", "wall_s", "events_per_s", "jobs_per_s", "avg_jct_s", "avg_queue_s", "preemptions")})


@pytest.mark.parametrize("policy", POLICIES)
def test_philly_2048(benchmark, philly, policy):
    replay(benchmark, philly, 2048, policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_philly_256(benchmark, philly, policy):
    replay(benchmark, philly, 256, policy)
