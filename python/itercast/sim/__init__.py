"""Event-driven GPU cluster simulator with the standard DL scheduling policies."""

from itercast.sim.cluster import Cluster, GpuPool
from itercast.sim.config import DEADLINE_POLICIES, PLACEMENTS, POLICIES, SimConfig
from itercast.sim.engine import Simulation, simulate
from itercast.sim.errors import SimConfigError, UnschedulableJobError, WorkloadError
from itercast.sim.joblog import JobLog, JobState, LogWorkload, log_summary
from itercast.sim.loaders import FORMATS, load_workload
from itercast.sim.logs import LOG_FORMATS, load_job_log
from itercast.sim.metrics import SimResult
from itercast.sim.workload import BadRow, JobSpec, Workload

__all__ = [
    "BadRow", "Cluster", "DEADLINE_POLICIES", "FORMATS", "GpuPool", "JobLog", "JobSpec", "JobState", "LOG_FORMATS",
    "LogWorkload", "PLACEMENTS", "POLICIES", "SimConfig", "SimConfigError", "SimResult", "Simulation",
    "UnschedulableJobError", "Workload", "WorkloadError", "load_job_log", "load_workload", "log_summary", "simulate",
]
