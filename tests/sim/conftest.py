import pytest

from itercast.sim import Cluster, JobSpec, SimConfig, Workload, simulate


def jobs(*rows):
    """(job_id, submit_s, gpus, duration_s[, estimate_s]) tuples -> Workload."""
    specs = []
    for row in rows:
        job_id, submit, gpus, duration, *estimate = row
        specs.append(JobSpec(job_id, submit, gpus, duration_s=duration,
                             estimate_s=estimate[0] if estimate else None))
    return Workload.from_jobs(specs)


def run(workload, nodes, gpus_per_node, **config):
    """Simulates and returns the result plus {job_id: JCT}."""
    result = simulate(workload, Cluster.homogeneous(nodes * gpus_per_node, gpus_per_node),
                      SimConfig(**config), record_segments=True)
    jct = dict(zip(workload.job_ids, (result.finish - workload.submit).tolist()))
    return result, jct


@pytest.fixture
def make_jobs():
    return jobs


@pytest.fixture
def run_sim():
    return run
