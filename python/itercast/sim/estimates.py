"""Duration estimates that SJF, SRTF and QSSF rank jobs by."""

from __future__ import annotations

import numpy as np

from itercast.sim.config import SimConfig
from itercast.sim.errors import SimConfigError
from itercast.sim.workload import Workload


def duration_estimates(workload: Workload, config: SimConfig) -> np.ndarray:
    """Estimated run time of each job on its fastest GPU type.

    oracle: the true duration; supplied: the workload's own estimates (e.g.
    from the iteration-time predictor); noisy: the true duration times a
    factor drawn uniformly from [1 - estimate_error, 1 + estimate_error].
    """
    truth = workload.duration
    if config.estimate == "oracle":
        return truth
    if config.estimate == "supplied":
        if workload.estimates is None:
            raise SimConfigError(
                f"estimate=supplied, but {workload.source} gives no estimate for every job "
                "(an estimated_duration column, or estimated_duration:<name> columns read with --estimator NAME)")
        return workload.estimates
    rng = np.random.default_rng(config.estimate_seed)
    return truth * rng.uniform(1 - config.estimate_error, 1 + config.estimate_error, size=len(truth))
