"""itercast autosched recommend: the cluster state read from a log, and the recommendation printed."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np

from itercast.cli.sim import _report_bad_rows, _time_option
from itercast.sched.recommend import ClusterState, Outcome, Recommendation, state_from_log, state_from_trace
from itercast.sched.replay import config_dict
from itercast.sim import Cluster, SimConfig, load_workload
from itercast.sim.config import PREEMPTIVE_POLICIES
from itercast.sim.errors import WorkloadError
from itercast.sim.loaders import RELATIVE_CLOCK_BEFORE_S, log_format_of, read_log


def cluster_state(args, cluster: Cluster, current: SimConfig) -> tuple[ClusterState, str]:
    """The state at --at from a cluster log (start and end times as recorded) or a replay trace
    (simulated under ``current``), and how it was obtained."""
    at = _time_option("--at", args.at)
    fmt = log_format_of(args.workload, args.format)
    if fmt is not None:
        log = read_log(args.workload, fmt, virtual_cluster=args.vc, strict=args.strict)
        _report_bad_rows(log)
        now = log.log_end if at is None else at
        return state_from_log(log, now), f"{fmt} log {args.workload}: live state as recorded"
    workload = load_workload(args.workload, args.format, virtual_cluster=args.vc, strict=args.strict)
    _report_bad_rows(workload)
    now = float(workload.submit.max()) if at is None else at
    if now <= float(workload.submit.min()):
        raise WorkloadError(f"--at {args.at} is before the first job of the trace", args.workload)
    return (state_from_trace(workload, cluster, current, now),
            f"trace {args.workload}: live state simulated under the configuration in force")


def recommendation_json(result: Recommendation, source: str) -> dict:
    return {
        "time_s": result.now, "time": _clock(result.now), "source": source,
        "running": result.running, "queued": result.queued, "finished_in_history": result.history_jobs,
        "switch": result.switch, "margin": result.margin, "note": result.note, "wall_s": result.wall_s,
        "current": _outcome_json(result.current), "recommended": _outcome_json(result.chosen),
        "alternatives": [_outcome_json(outcome) for outcome in result.alternatives],
    }


def _outcome_json(outcome: Outcome) -> dict:
    return {
        "config": config_dict(outcome.config), "search_score_s": _finite(outcome.search_score),
        "avg_jct_s": [_finite(value) for value in outcome.avg_jct_s],
        "p99_jct_s": [_finite(value) for value in outcome.p99_jct_s],
        "avg_jct_change": _finite(np.mean(outcome.avg_change)) if len(outcome.avg_change) else None,
        "avg_jct_change_range": _range(outcome.avg_change),
        "p99_jct_change": _finite(np.mean(outcome.p99_change)) if len(outcome.p99_change) else None,
        "p99_jct_change_range": _range(outcome.p99_change),
    }


def _range(values: np.ndarray):
    return [_finite(values.min()), _finite(values.max())] if len(values) else None


def _finite(value):
    value = float(value)
    return value if math.isfinite(value) else None


def print_recommendation(result: Recommendation, source: str) -> None:
    print(f"at {_clock(result.now)}: {result.running} jobs running, {result.queued} queued; "
          f"{result.history_jobs} finished jobs in the history ({source})")
    print(f"in force:     {describe(result.current.config)}")
    if result.note:
        print(f"no recommendation: {result.note}")
        return
    verdict = "switch to" if result.switch else "keep"
    print(f"recommended:  {verdict} {describe(result.chosen.config)}")
    if result.switch:
        print(f"  {_changes(result.chosen)}")
    else:
        print(f"  no candidate beat it by the margin ({result.margin:.0%}) on average over the futures")
    if result.alternatives:
        print("next best:")
        for outcome in result.alternatives:
            print(f"  {describe(outcome.config)}\n    {_changes(outcome)}")
    print(f"({len(result.current.avg_jct_s)} fresh futures, {result.wall_s:.1f} s)")


def _changes(outcome: Outcome) -> str:
    return (f"avg JCT {_percent(np.mean(outcome.avg_change))} (futures {_spread(outcome.avg_change)}), "
            f"p99 JCT {_percent(np.mean(outcome.p99_change))} (futures {_spread(outcome.p99_change)})")


def _spread(changes: np.ndarray) -> str:
    return f"{_percent(changes.min())} to {_percent(changes.max())}"


def _percent(change: float) -> str:
    return f"{change:+.1%}" if math.isfinite(change) else "n/a"


def describe(config: SimConfig) -> str:
    """A configuration as an operator reads it: the policy, then only the knobs that policy uses."""
    fields = config_dict(config)
    knobs = {"placement": fields["placement"], "backfill": fields["backfill"]}
    if config.policy in PREEMPTIVE_POLICIES:
        knobs["lease_s"] = f"{config.lease_s:.0f}"
    if config.policy == "tiresias":
        knobs["queue_limits_gpu_s"] = "/".join(f"{limit:.0f}" for limit in fields["queue_limits_gpu_s"])
        knobs["starvation_factor"] = f"{config.starvation_factor:.3g}"
    return f"{config.policy} ({', '.join(f'{key}={value}' for key, value in knobs.items())})"


def _clock(seconds: float) -> str:
    if seconds < RELATIVE_CLOCK_BEFORE_S:
        return f"t={seconds:.0f} s"
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
