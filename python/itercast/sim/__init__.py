"""Event-driven GPU cluster simulator with the standard DL scheduling policies."""

from itercast.sim.cluster import Cluster, GpuPool
from itercast.sim.config import DEADLINE_POLICIES, PLACEMENTS, POLICIES, SimConfig
from itercast.sim.engine import Simulation, simulate
from itercast.sim.errors import SimConfigError, UnschedulableJobError, WorkloadError
from itercast.sim.loaders import FORMATS, load_workload
from itercast.sim.metrics import SimResult
from itercast.sim.workload import BadRow, JobSpec, Workload

__all__ = [
    "BadRow", "Cluster", "DEADLINE_POLICIES", "FORMATS", "GpuPool", "JobSpec", "PLACEMENTS", "POLICIES", "SimConfig",
    "SimConfigError", "SimResult", "Simulation", "UnschedulableJobError", "Workload", "WorkloadError",
    "load_workload", "simulate",
]
