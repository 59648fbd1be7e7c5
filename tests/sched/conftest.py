import numpy as np
import pytest

from itercast.sim import Workload, load_workload
from shared_data import shared_dir


def workload(submit, gpus, duration, vc=None):
    """Columns -> Workload; ``vc`` None is the Tiresias format (no virtual clusters)."""
    submit = np.asarray(submit, dtype=np.float64)
    return Workload(
        job_ids=np.array([f"j{i}" for i in range(len(submit))], dtype=object),
        submit=submit,
        gpus=np.broadcast_to(np.asarray(gpus, dtype=np.int64), submit.shape).copy(),
        durations=np.broadcast_to(np.asarray(duration, dtype=np.float64), submit.shape).reshape(-1, 1).copy(),
        virtual_cluster=None if vc is None else np.broadcast_to(np.asarray(vc, dtype=object), submit.shape).copy(),
    )


@pytest.fixture
def make_workload():
    return workload


@pytest.fixture(scope="session")
def philly():
    """The Philly trace with each job's finish time on a cluster that never queues."""
    try:
        root = shared_dir()
    except RuntimeError as error:
        pytest.skip(str(error))
    jobs = load_workload(root / "workloads" / "philly_jobs.csv")
    return jobs, jobs.submit + jobs.duration
