"""Drifting workloads from a real one: a documented, seeded generator of
scenarios in which the job mix changes during a window, for testing a
self-tuning scheduler on changes a trace's own weeks may not show.

``drift(base, start, end, scenario)`` returns ``base`` with the jobs submitted
in ``[start, end)`` changed from the scenario's drift point on (``start + at x
(end - start)``); jobs before the drift point and outside the window are the
base's own, untouched. How much changes at an instant ``t`` is the
scenario's multiplier ``m(t)``: 1 before the drift point, then ``factor``
(``shape="step"``) or rising linearly from 1 at the drift point to
``factor`` at ``end`` (``shape="ramp"``). The kinds (``DRIFT_KINDS``):

``arrival-rate``
    Each base job submitted at ``t`` after the drift point is present
    ``m(t)`` times in expectation: ``floor(m)`` times, and once more with
    probability ``m - floor(m)`` (so a factor below 1 keeps each job with
    probability ``m``, and an integer factor is exact). The first copy is
    the job itself; each extra copy is a bootstrap draw (uniform, with
    replacement) of the GPU count, durations and virtual cluster of a job
    of the window, submitted uniformly between ``t`` and the next base
    submission (at most an hour later), so the arrivals keep the base's
    daily shape and bursts.
``gpu-mix``
    The share of multi-GPU jobs (more than one GPU) among the jobs after
    the drift point becomes ``m(t)`` times its share there in the base
    (``q``): where ``m q > q`` each single-GPU job is replaced, with
    probability ``(m q - q) / (1 - q)``, by a bootstrap draw of the
    window's multi-GPU jobs (GPU count and durations together, so both stay
    realistic), keeping its submit time; where ``m q < q`` each multi-GPU
    job is replaced by a single-GPU one with probability ``(q - m q) / q``.
    ``factor x q`` must stay below 1.
``duration-scale``
    Every job after the drift point runs ``m(t)`` times as long (on every
    GPU type; supplied estimates and per-type estimates scale alike, and a
    deadline keeps its slack in proportion). Deterministic: the seed is not
    used.
``long-tail``
    As ``gpu-mix``, for long jobs instead of multi-GPU ones: a long job is
    one whose duration (on its fastest type) is at or above the 90th
    percentile of the window's jobs; their share after the drift point
    becomes ``m(t)`` times its base share there.

Replacements and copies are drawn from the base jobs submitted in
``[start, end)`` (the window's own mix, not the warm-up's). New jobs get ids
``<base id>~d<k>``; the result is sorted by submit time (stable). Every draw
comes from ``numpy.random.SeedSequence(seed, spawn_key=(DRIFT_STREAM,
DRIFT_KINDS.index(kind)))``, so a scenario is the same for a seed on any
machine and a different seed gives different jobs.

``SCENARIOS`` are the named scenarios of benchmarks/autosched_evidence.py
(docs/autosched-evidence.md).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from itercast.sim.workload import Workload

DRIFT_KINDS = ("arrival-rate", "gpu-mix", "duration-scale", "long-tail")
SHAPES = ("step", "ramp")
# A spawn key of its own (no child of itercast.sched.streams' seeds is drawn from it): "drif".
DRIFT_STREAM = 0x64726966
# Extra copies of an arrival are spread up to the next base submission, at most this much later.
MAX_SPREAD_S = 3600.0
# The long jobs of ``long-tail``: at or above this percentile of the window's durations.
LONG_PERCENTILE = 90.0


@dataclass(frozen=True)
class DriftScenario:
    """One named drift: ``kind`` (``DRIFT_KINDS``), ``factor`` (> 0), the drift
    point ``at`` (a fraction of the window in [0, 1)), ``shape`` (``SHAPES``)
    and the ``seed`` of its draws."""

    name: str
    kind: str
    factor: float
    at: float = 0.5
    shape: str = "step"
    seed: int = 0

    def __post_init__(self):
        if self.kind not in DRIFT_KINDS:
            raise ValueError(f"drift kind must be one of {', '.join(DRIFT_KINDS)}, not {self.kind!r}")
        if self.shape not in SHAPES:
            raise ValueError(f"drift shape must be one of {', '.join(SHAPES)}, not {self.shape!r}")
        if not (isinstance(self.factor, (int, float)) and math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"drift factor must be a positive finite number, got {self.factor!r}")
        if not (isinstance(self.at, (int, float)) and 0 <= self.at < 1):
            raise ValueError(f"drift point 'at' must be a fraction of the window in [0, 1), got {self.at!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"drift seed must be a non-negative integer, got {self.seed!r}")

    def drift_point(self, start: float, end: float) -> float:
        return start + self.at * (end - start)

    def multiplier(self, t: np.ndarray, start: float, end: float) -> np.ndarray:
        """``m(t)``: 1 before the drift point, then ``factor`` (step) or a
        linear rise from 1 to ``factor`` at ``end`` (ramp)."""
        t = np.asarray(t, dtype=np.float64)
        point = self.drift_point(start, end)
        after = t >= point
        if self.shape == "step":
            return np.where(after, self.factor, 1.0)
        progress = np.clip((t - point) / (end - point), 0.0, 1.0)
        return np.where(after, 1.0 + (self.factor - 1.0) * progress, 1.0)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        how = (f"x{self.factor:g} from {self.at:.0%} of the window" if self.shape == "step"
               else f"ramping from x1 at {self.at:.0%} of the window to x{self.factor:g} at its end")
        return f"{self.name}: {self.kind} {how}, seed {self.seed}"


# The scenarios of the evidence run, on the Philly window benchmarks/autosched_evidence.py names.
SCENARIOS = (
    DriftScenario("rate-step-up", "arrival-rate", 1.5, at=0.5, shape="step", seed=1),
    DriftScenario("rate-ramp-up", "arrival-rate", 2.0, at=0.0, shape="ramp", seed=2),
    DriftScenario("rate-step-down", "arrival-rate", 0.5, at=0.5, shape="step", seed=3),
    DriftScenario("multi-gpu-up", "gpu-mix", 2.0, at=0.5, shape="step", seed=4),
    DriftScenario("durations-up", "duration-scale", 1.5, at=0.5, shape="step", seed=5),
    DriftScenario("long-tail-up", "long-tail", 2.5, at=0.25, shape="ramp", seed=6),
)


def scenario(name: str) -> DriftScenario:
    """One of ``SCENARIOS`` by name."""
    for each in SCENARIOS:
        if each.name == name:
            return each
    raise ValueError(f"no drift scenario {name!r} (known: {', '.join(each.name for each in SCENARIOS)})")


def drift(base: Workload, start: float, end: float, scenario: DriftScenario) -> Workload:
    """``base`` with its jobs of ``[start, end)`` drifting as ``scenario`` says
    (module docstring); deterministic for the scenario's seed."""
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise ValueError(f"the drift window needs finite start < end, got [{start}, {end})")
    if base.live:
        raise ValueError("a drifting workload is made from fresh jobs; this one carries live-cluster state")
    in_window = (base.submit >= start) & (base.submit < end)
    if not in_window.any():
        raise ValueError(f"no job of {base.source} is submitted in the drift window [{start}, {end})")
    rng = np.random.default_rng(np.random.SeedSequence(
        int(scenario.seed), spawn_key=(DRIFT_STREAM, DRIFT_KINDS.index(scenario.kind))))
    shifted = in_window & (base.submit >= scenario.drift_point(start, end))
    m = scenario.multiplier(base.submit, start, end)
    pool = np.flatnonzero(in_window)
    if scenario.kind == "duration-scale":
        return _scaled(base, shifted, m)
    if scenario.kind == "arrival-rate":
        return _rate(base, shifted, m, pool, end, rng)
    if scenario.kind == "gpu-mix":
        member = base.gpus > 1
        what = "multi-GPU"
    else:
        member = base.duration >= np.percentile(base.duration[pool], LONG_PERCENTILE)
        what = "long"
    return _share(base, shifted, m, pool, member, what, scenario.factor, rng)


def shares(workload: Workload, start: float, end: float) -> dict:
    """What a drift changes, over the jobs submitted in ``[start, end)``: their
    count, the share of multi-GPU jobs, the mean GPU count, the mean
    duration (fastest type) and GPU-seconds."""
    jobs = workload.window(start, end)
    if len(jobs) == 0:
        return {"jobs": 0, "multi_gpu_share": math.nan, "mean_gpus": math.nan, "mean_duration_s": math.nan,
                "gpu_s": 0.0}
    return {"jobs": len(jobs), "multi_gpu_share": float(np.mean(jobs.gpus > 1)),
            "mean_gpus": float(np.mean(jobs.gpus)), "mean_duration_s": float(np.mean(jobs.duration)),
            "gpu_s": float(np.sum(jobs.gpus * jobs.duration))}


def _scaled(base: Workload, shifted: np.ndarray, m: np.ndarray) -> Workload:
    factor = np.where(shifted, m, 1.0)
    changes = {"durations": base.durations * factor[:, None]}
    if base.estimates is not None:
        changes["estimates"] = base.estimates * factor
    if base.type_estimates is not None:
        changes["type_estimates"] = base.type_estimates * factor[:, None]
    if base.deadlines is not None:
        changes["deadlines"] = base.submit + (base.deadlines - base.submit) * factor
    return dataclasses.replace(base, **changes)


def _rate(base: Workload, shifted: np.ndarray, m: np.ndarray, pool: np.ndarray, end: float,
          rng: np.random.Generator) -> Workload:
    jobs = np.flatnonzero(shifted)
    whole = np.floor(m[jobs]).astype(np.int64)
    copies = whole + (rng.random(len(jobs)) < (m[jobs] - whole))
    keep = np.ones(len(base), dtype=bool)
    keep[jobs[copies == 0]] = False
    extra_of = np.repeat(jobs, np.maximum(copies - 1, 0))  # the base arrival each extra copy follows
    donors = rng.choice(pool, size=len(extra_of)) if len(extra_of) else np.empty(0, dtype=np.int64)
    order = np.sort(base.submit[pool])
    following = np.searchsorted(order, base.submit[extra_of], side="right")
    next_submit = np.where(following < len(order), order[np.minimum(following, len(order) - 1)], end)
    spread = np.minimum(next_submit - base.submit[extra_of], MAX_SPREAD_S)
    submit = base.submit[extra_of] + rng.random(len(extra_of)) * spread
    extra = _as_new(base, donors, submit, extra_of)
    return _sorted(Workload.concat([base.subset(keep), extra], source=base.source))


def _share(base: Workload, shifted: np.ndarray, m: np.ndarray, pool: np.ndarray, member: np.ndarray,
           what: str, factor: float, rng: np.random.Generator) -> Workload:
    jobs = np.flatnonzero(shifted)
    if len(jobs) == 0:
        return base
    share = float(member[jobs].mean())
    if share == 0:
        raise ValueError(f"no {what} job after the drift point: a share of 0 stays 0 whatever the factor")
    if factor * share >= 1:
        raise ValueError(f"the {what} jobs' share after the drift point is {share:.3f}: a factor of {factor:g} "
                         f"would make it {factor * share:.3f}, and a share must stay below 1")
    target = m[jobs] * share
    # switching probabilities: a non-member joins the class where the share rises, a member leaves where it falls
    up = np.where(member[jobs], 0.0, (target - share) / (1 - share)) if share < 1 else np.zeros(len(jobs))
    down = np.where(member[jobs], (share - target) / share, 0.0)
    switch = rng.random(len(jobs)) < np.clip(np.maximum(up, down), 0.0, 1.0)
    into_class = switch & ~member[jobs]
    members, others = pool[member[pool]], pool[~member[pool]]
    if into_class.any() and len(members) == 0:
        raise ValueError(f"no {what} job in the base window to draw from")
    if (switch & member[jobs]).any() and len(others) == 0:
        raise ValueError(f"no job of the base window that is not {what} to draw from")
    replaced = jobs[switch]
    donors = np.where(into_class[switch], rng.choice(members, size=len(replaced)) if len(members) else -1,
                      rng.choice(others, size=len(replaced)) if len(others) else -1)
    keep = np.ones(len(base), dtype=bool)
    keep[replaced] = False
    new = _as_new(base, donors, base.submit[replaced], replaced)
    return _sorted(Workload.concat([base.subset(keep), new], source=base.source))


def _as_new(base: Workload, donors: np.ndarray, submit: np.ndarray, of: np.ndarray) -> Workload:
    """Jobs with the attributes of ``donors`` submitted at ``submit``, named after the base job ``of``
    each stands for (a deadline keeps its donor's slack)."""
    new = base.subset(np.asarray(donors, dtype=np.int64))
    counts: dict[str, int] = {}
    ids = []
    for job in base.job_ids[of]:
        counts[job] = counts.get(job, 0) + 1
        ids.append(f"{job}~d{counts[job]}")
    changes: dict[str, Optional[np.ndarray]] = {"submit": np.asarray(submit, dtype=np.float64),
                                                "job_ids": np.array(ids, dtype=object)}
    if new.deadlines is not None:
        changes["deadlines"] = new.deadlines + (changes["submit"] - new.submit)
    return dataclasses.replace(new, **changes)


def _sorted(workload: Workload) -> Workload:
    return workload.subset(np.argsort(workload.submit, kind="stable"))
