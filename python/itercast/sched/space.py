"""The configurations a tuner may choose from: every policy of the simulator
with its knobs, as ranges an Optuna trial samples.

Tiresias' queue limits are continuous: the first limit and a growth ratio
between consecutive limits, both log-uniform, so a trial can land anywhere
between the equal-mass percentiles of a history rather than only on them.
Restart overhead is a property of the cluster, not a knob, and stays as the
base configuration has it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from itercast.sim.config import DEADLINE_POLICIES, PLACEMENTS, POLICIES, PREEMPTIVE_POLICIES, SimConfig
from itercast.sim.errors import SimConfigError

DURATION_AWARE_POLICIES = ("sjf", "srtf", "qssf")
MAX_QUEUES = 9


@dataclass(frozen=True)
class SearchSpace:
    # deadline policies only where the jobs have deadlines, which average-JCT tuning does not use
    policies: tuple[str, ...] = tuple(p for p in POLICIES if p not in DEADLINE_POLICIES)
    queues: tuple[int, int] = (2, 9)
    first_limit_gpu_s: tuple[float, float] = (60.0, 200_000.0)
    limit_ratio: tuple[float, float] = (1.2, 30.0)
    starvation_factor: tuple[float, float] = (1.0, 100.0)  # or 0: no promotion
    lease_s: tuple[float, float] = (60.0, 3600.0)
    placements: tuple[str, ...] = PLACEMENTS
    backfill: tuple[bool, ...] = (True, False)

    def __post_init__(self):
        object.__setattr__(self, "policies", tuple(self.policies))
        unknown = sorted(set(self.policies) - set(POLICIES))
        _require(self.policies and not unknown, f"search space policies must be some of {', '.join(POLICIES)}"
                 + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        _require(set(self.placements) <= set(PLACEMENTS) and self.placements,
                 f"search space placements must be some of {', '.join(PLACEMENTS)}")
        _require(len(self.backfill) > 0, "search space backfill needs at least one value")
        low, high = self.queues
        _require(2 <= low <= high <= MAX_QUEUES, f"queues must be a range within 2..{MAX_QUEUES}, got {self.queues}")
        for name in ("first_limit_gpu_s", "limit_ratio", "starvation_factor", "lease_s"):
            low, high = getattr(self, name)
            _require(0 < low <= high, f"{name} must be a range 0 < low <= high, got {(low, high)}")
        _require(self.limit_ratio[0] > 1, f"limit_ratio must exceed 1 (limits ascend), got {self.limit_ratio}")

    def suggest(self, trial, base: SimConfig) -> SimConfig:
        """The configuration an Optuna trial proposes (define-by-run: each
        policy's knobs are only sampled when that policy is)."""
        policy = trial.suggest_categorical("policy", list(self.policies))
        changes: dict[str, Any] = {
            "policy": policy,
            "placement": trial.suggest_categorical("placement", list(self.placements)),
            "backfill": trial.suggest_categorical("backfill", list(self.backfill)),
        }
        if policy in PREEMPTIVE_POLICIES:
            changes["lease_s"] = trial.suggest_float("lease_s", *self.lease_s, log=True)
        if policy == "tiresias":
            queues = trial.suggest_int("queues", *self.queues)
            first = trial.suggest_float("first_limit_gpu_s", *self.first_limit_gpu_s, log=True)
            ratio = trial.suggest_float("limit_ratio", *self.limit_ratio, log=True)
            starve = trial.suggest_categorical("starvation", [False, True])
            changes.update(queues=queues, queue_limits_gpu_s=geometric_limits(first, ratio, queues - 1),
                           starvation_factor=trial.suggest_float("starvation_factor", *self.starvation_factor,
                                                                 log=True) if starve else 0.0)
        return dataclasses.replace(base, **changes)

    def params_of(self, config: SimConfig) -> dict:
        """Trial parameters that make ``suggest`` return (about) ``config``:
        seeds a study with configurations worth trying first."""
        params: dict[str, Any] = {"policy": config.policy, "placement": config.placement,
                                  "backfill": config.backfill}
        if config.policy in PREEMPTIVE_POLICIES:
            params["lease_s"] = _clip(config.lease_s, self.lease_s)
        if config.policy == "tiresias":
            limits = config.queue_thresholds_gpu_s
            ratio = (limits[-1] / limits[0]) ** (1 / (len(limits) - 1)) if len(limits) > 1 else 2.0
            params.update(queues=int(_clip(config.queues, self.queues)),
                          first_limit_gpu_s=_clip(limits[0], self.first_limit_gpu_s),
                          limit_ratio=_clip(ratio, self.limit_ratio),
                          starvation=config.starvation_factor > 0)
            if config.starvation_factor > 0:
                params["starvation_factor"] = _clip(config.starvation_factor, self.starvation_factor)
        return params

    def contains(self, config: SimConfig) -> bool:
        return (config.policy in self.policies and config.placement in self.placements
                and config.backfill in self.backfill)


def geometric_limits(first: float, ratio: float, count: int) -> tuple[float, ...]:
    return tuple(first * ratio ** index for index in range(count))


def _clip(value: float, bounds: tuple) -> float:
    return min(max(value, bounds[0]), bounds[1])


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SimConfigError(message)
