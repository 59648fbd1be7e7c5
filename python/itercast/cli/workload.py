"""itercast workload: look at a cluster's job log before simulating it."""

from __future__ import annotations

import argparse
from pathlib import Path

from itercast.cli import options
from itercast.cli.sim import _report_bad_rows, _time_option
from itercast.errors import ItercastError
from itercast.sim import FORMATS, Cluster, load_workload


def register(subparsers) -> None:
    parser = subparsers.add_parser("workload", help="summaries of a workload (a cluster's job log)")
    actions = parser.add_subparsers(dest="action", required=True)
    report = actions.add_parser(
        "report", help="an HTML page showing a workload at a glance",
        description="Writes DIR/index.html with its plots beside it: arrivals by hour and weekday, the GPU-count "
                    "mix, durations by GPU count and virtual cluster, offered load against capacity and, with "
                    "--gpus and --gpus-per-node, the standard policies simulated on it. "
                    "See docs/workload-report.md.")
    report.add_argument("log", metavar="LOG", help="the workload: a job log or trace CSV")
    report.add_argument("--format", choices=sorted(FORMATS), help="the log's schema (default: from the header)")
    report.add_argument("--gpus", type=_positive_int, help="GPUs in the cluster: draws the capacity line")
    report.add_argument("--gpus-per-node", type=_positive_int,
                        help="GPUs per node; with --gpus, the policies are simulated on the workload")
    report.add_argument("--out", required=True, metavar="DIR", help="folder the page and its plots are written to")
    report.add_argument("--start", help="keep jobs submitted at or after this time (seconds or ISO date)")
    report.add_argument("--end", help="keep jobs submitted before this time (seconds or ISO date)")
    options.add_list_option(report, "--vc", metavar="NAME", help="keep the jobs of these virtual clusters only")
    report.add_argument("--strict", action="store_true", help="fail on the first bad row instead of skipping it")
    report.set_defaults(run=run_report)


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def run_report(args) -> int:
    from itercast.sim.report import ReportSettings, write_report

    if args.gpus_per_node is not None:
        if args.gpus is None:
            raise ItercastError("--gpus-per-node needs --gpus")
        Cluster.homogeneous(args.gpus, args.gpus_per_node)  # refuses a bad shape before the log is read
    workload = load_workload(args.log, args.format, start=_time_option("--start", args.start),
                             end=_time_option("--end", args.end), virtual_cluster=args.vc, strict=args.strict)
    _report_bad_rows(workload)
    settings = ReportSettings(format_name=args.format or "detected from the header", gpus=args.gpus,
                              gpus_per_node=args.gpus_per_node, filters=_filters(args))
    print(write_report(workload, Path(args.out), settings))
    return 0


def _filters(args) -> str:
    given = (("--start", args.start), ("--end", args.end), ("--vc", ",".join(args.vc or ())))
    return " ".join(f"{flag} {value}" for flag, value in given if value)
