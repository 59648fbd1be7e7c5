"""itercast sim: replay a job trace on a simulated GPU cluster under a policy."""

from __future__ import annotations

import json
import sys

from itercast.cli import options
from itercast.sim import FORMATS, POLICIES, Cluster, SimConfig, load_workload, log_summary, simulate
from itercast.sim.errors import SimConfigError
from itercast.sim.loaders import parse_time

MAX_BAD_ROWS_SHOWN = 10


def register(subparsers):
    parser = subparsers.add_parser(
        "sim", help="simulate a GPU cluster replaying a job trace under a scheduling policy",
        description="Replay a workload (Philly, Tiresias or Helios CSV, or a Slurm, PAI or Kubernetes log) on a "
                    "simulated cluster. "
                    "See docs/sim.md for the policies and every --set field.")
    parser.add_argument("--workload", required=True, help="workload CSV or cluster log (docs/sim.md)")
    parser.add_argument("--format", choices=sorted(FORMATS), help="its format (default: from the header)")
    parser.add_argument("--gpus", type=int, required=True, help="total GPUs in the cluster")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="GPUs per node")
    parser.add_argument("--policy", choices=POLICIES, required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="set a configuration field, e.g. lease_s=60 or queue_limits_gpu_s=600,3600")
    parser.add_argument("--start", help="keep jobs submitted at or after this time (seconds or ISO date)")
    parser.add_argument("--end", help="keep jobs submitted before this time (seconds or ISO date)")
    options.add_list_option(parser, "--vc", metavar="NAME", help="keep the jobs of these virtual clusters only")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad row instead of skipping it")
    parser.add_argument("--estimator", metavar="NAME",
                        help="rank by the estimates of column estimated_duration:NAME instead of estimated_duration "
                             "(e.g. a workload written by itercast experiment sched-prediction --write-workload)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args) -> int:
    config = SimConfig(policy=args.policy).with_settings(args.set)
    cluster = Cluster.homogeneous(args.gpus, args.gpus_per_node)
    workload = load_workload(args.workload, args.format, start=_time_option("--start", args.start),
                             end=_time_option("--end", args.end), virtual_cluster=args.vc, estimator=args.estimator,
                             strict=args.strict)
    _report_bad_rows(workload)
    summary = simulate(workload, cluster, config).summary()
    summary.update(policy=config.policy, gpus=cluster.total_gpus, bad_rows=len(workload.bad_rows))
    if args.json:
        print(json.dumps(summary))
    else:
        _print_table(summary)
    return 0


def _time_option(flag: str, text):
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as error:
        raise SimConfigError(f"{flag}: {error}") from None


def _report_bad_rows(workload) -> None:
    """The rows skipped, and for a scheduler's log what it left out and approximated, on stderr."""
    note = log_summary(workload)
    if note:
        print(f"note: {note}", file=sys.stderr)
    for bad in workload.bad_rows[:MAX_BAD_ROWS_SHOWN]:
        print(f"warning: {workload.source}:{bad.line}: skipped: {bad.reason}", file=sys.stderr)
    hidden = len(workload.bad_rows) - MAX_BAD_ROWS_SHOWN
    if hidden > 0:
        print(f"warning: {workload.source}: {hidden} more bad rows skipped", file=sys.stderr)


def _print_table(summary: dict) -> None:
    rows = [
        ("policy", summary["policy"]), ("jobs", summary["jobs"]),
        ("avg / p50 / p95 / p99 JCT (s)",
         " / ".join(f"{summary[k]:.0f}" for k in ("avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s"))),
        ("avg / p99 queueing (s)", f"{summary['avg_queue_s']:.0f} / {summary['p99_queue_s']:.0f}"),
        ("makespan (s)", f"{summary['makespan_s']:.0f}"),
        ("GPU utilization", f"{summary['utilization']:.1%}"),
        ("preemptions", summary["preemptions"]),
        ("events", f"{summary['events']} in {summary['wall_s']:.3f} s ({summary['events_per_s']:.0f}/s)"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"{'by GPUs':<{width}}  jobs  avg JCT (s)  avg queueing (s)")
    for gpus, row in summary["by_gpus"].items():
        print(f"{gpus:>{width}}  {row['jobs']:>4}  {row['avg_jct_s']:>11.0f}  {row['avg_queue_s']:>16.0f}")
