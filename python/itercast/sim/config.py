"""The simulator's configuration: every knob of every policy is one field here,
so a tuner can set any of them (``dataclasses.replace``) or the CLI can
(``--set key=value``). docs/sim.md explains each field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

from itercast.sim.errors import SimConfigError

POLICIES = ("fifo", "sjf", "srtf", "las", "tiresias", "qssf", "edf", "lst")
DEADLINE_POLICIES = ("edf", "lst")  # rank by the workload's deadlines
PREEMPTIVE_POLICIES = ("srtf", "las", "tiresias")
PLACEMENTS = ("consolidated", "spread")
ESTIMATE_MODES = ("oracle", "supplied", "noisy")
# Which GPU type a job on a heterogeneous cluster tries first: the one it truly runs fastest on
# (an oracle), the one its per-type estimates say (the workload's type_estimates), or an order
# drawn from its job id that ignores speed (type-blind).
GPU_TYPE_CHOICES = ("fastest", "estimated", "blind")
# Fields fixed for a whole simulation (what the jobs are known by), not policy knobs a tuner sets.
PER_SIMULATION_FIELDS = ("estimate", "estimate_error", "estimate_seed", "gpu_type_choice")

# Tiresias' simulator keeps one list of queue limits and uses its first
# ``queues - 1`` entries: 2 queues -> 3600 GPU-s, 3 queues -> 3600/7200.
TIRESIAS_QUEUE_LIMITS_GPU_S = (3600.0, 7200.0, 18000.0)


@dataclass(frozen=True)
class SimConfig:
    policy: str = "fifo"
    placement: str = "consolidated"
    backfill: bool = True
    restart_overhead_s: float = 30.0
    lease_s: float = 300.0
    queues: int = 2
    queue_limits_gpu_s: tuple[float, ...] = TIRESIAS_QUEUE_LIMITS_GPU_S
    starvation_factor: float = 0.0
    estimate: str = "oracle"
    estimate_error: float = 0.5
    estimate_seed: int = 0
    gpu_type_choice: str = "fastest"

    def __post_init__(self):
        object.__setattr__(self, "queue_limits_gpu_s", tuple(float(v) for v in self.queue_limits_gpu_s))
        _require(self.policy in POLICIES, f"policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")
        _require(self.placement in PLACEMENTS,
                 f"placement must be one of {', '.join(PLACEMENTS)}, not {self.placement!r}")
        _require(self.estimate in ESTIMATE_MODES,
                 f"estimate must be one of {', '.join(ESTIMATE_MODES)}, not {self.estimate!r}")
        _require(self.restart_overhead_s >= 0, "restart_overhead_s must be >= 0")
        _require(self.lease_s >= 0, "lease_s must be >= 0")
        _require(self.queues >= 1, "queues must be >= 1")
        limits = self.queue_limits_gpu_s
        _require(len(limits) >= self.queues - 1,
                 f"{self.queues} queues need {self.queues - 1} queue_limits_gpu_s, got {len(limits)}")
        _require(all(v > 0 for v in limits) and list(limits) == sorted(set(limits)),
                 "queue_limits_gpu_s must be positive and strictly increasing")
        _require(self.starvation_factor >= 0, "starvation_factor must be >= 0 (0 disables promotion)")
        _require(0 <= self.estimate_error < 1, "estimate_error must be in [0, 1)")
        _require(self.gpu_type_choice in GPU_TYPE_CHOICES,
                 f"gpu_type_choice must be one of {', '.join(GPU_TYPE_CHOICES)}, not {self.gpu_type_choice!r}")

    @property
    def preemptive(self) -> bool:
        return self.policy in PREEMPTIVE_POLICIES

    @property
    def queue_thresholds_gpu_s(self) -> tuple[float, ...]:
        """The attained-service limits actually in use: one fewer than queues."""
        return self.queue_limits_gpu_s[: self.queues - 1]

    def with_settings(self, settings: Iterable[str]) -> "SimConfig":
        """A copy with ``key=value`` strings applied (the CLI's ``--set``)."""
        changes = {}
        for setting in settings:
            key, sep, text = setting.partition("=")
            key = key.strip()
            if not sep or key not in _FIELD_TYPES:
                raise SimConfigError(
                    f"--set expects key=value with key one of {', '.join(_FIELD_TYPES)}; got {setting!r}")
            changes[key] = _parse_value(key, text.strip())
        return dataclasses.replace(self, **changes)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SimConfigError(message)


_FIELD_TYPES = {field.name: field.type for field in dataclasses.fields(SimConfig)}


def _parse_value(key: str, text: str):
    kind = _FIELD_TYPES[key]
    try:
        if kind == "bool":
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind.startswith("tuple"):
            return tuple(float(part) for part in text.replace("/", ",").split(",") if part.strip())
    except ValueError:
        raise SimConfigError(f"{key}: cannot read {text!r} as {kind}") from None
    return text
