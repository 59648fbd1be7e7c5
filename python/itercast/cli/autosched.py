"""itercast autosched: replay a job trace with a scheduler that re-configures itself."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from itercast.cli import options
from itercast.cli.sim import MAX_BAD_ROWS_SHOWN, _report_bad_rows, _time_option
from itercast.errors import ItercastError
from itercast.sched.replay import DEFAULT_CONFIG
from itercast.sched.forecast import DURATION_MODELS
from itercast.sched.tuner import OBJECTIVES, TunerSettings
from itercast.sim import FORMATS, Cluster, load_workload

PROGRESS_AFTER_S = 2.0


REQUIRED = ("workload", "gpus", "gpus_per_node")


def register(subparsers):
    parser = subparsers.add_parser(
        "autosched", help="replay a job trace with online tuning of the scheduler's configuration, or recommend "
                          "the configuration to run next on a real cluster (autosched recommend)",
        usage="itercast autosched [recommend] --workload LOG --gpus N --gpus-per-node G [options]",
        description="Replay a workload on a simulated cluster, starting from Tiresias (2 queues, 3,600 GPU-s); "
                    "every --interval seconds the tuner forecasts the coming jobs, simulates candidate "
                    "configurations from the live cluster state and switches when one is --margin better "
                    "(with --review-budget, once a day it also replays the last --review seconds of jobs "
                    "to choose the configuration it returns to). "
                    "'itercast autosched recommend' runs one such re-tune from a real cluster's log instead and "
                    "prints the configuration to use next. See docs/autosched.md.")
    # Not required here: 'autosched recommend' takes them after the action; run() checks them.
    _add_workload_options(parser, required=False)
    _add_tuner_options(parser)
    parser.add_argument("--interval", type=float, default=3600.0, metavar="SECONDS",
                        help="seconds between re-tunes (default 3600)")
    parser.add_argument("--review", type=float, default=7 * 86400.0, metavar="SECONDS",
                        help="seconds of past jobs the daily review replays to choose home (default 604800)")
    parser.add_argument("--review-budget", type=int, default=0,
                        help="simulations per daily review of the last --review seconds, e.g. 64; "
                             "0, the default, reviews nothing (docs/autosched.md)")
    parser.add_argument("--start", help="keep jobs submitted at or after this time (seconds or ISO date)")
    parser.add_argument("--end", help="keep jobs submitted before this time (seconds or ISO date)")
    parser.add_argument("--estimator", metavar="NAME",
                        help="rank by the estimates of column estimated_duration:NAME instead of estimated_duration "
                             "(e.g. a workload written by itercast experiment sched-prediction --write-workload)")
    parser.add_argument("--plot", metavar="FILE", help="draw JCT of finishing jobs over time with the switches")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
    actions = parser.add_subparsers(dest="action", title="actions", metavar="recommend")
    _register_recommend(actions)


def _register_recommend(actions) -> None:
    parser = actions.add_parser(
        "recommend", help="the configuration to run for the next interval, from a cluster's log",
        description="Fit the forecaster on the log's history up to --at (default: the log's end), take the jobs "
                    "running or queued then as the live state, search the configuration space on sampled "
                    "futures, and print the configuration to use next with its expected change of average and "
                    "p99 JCT against the one in force (--current), the spread of that change over fresh "
                    "futures, and the next best alternatives. Slurm, PAI and Kubernetes logs give the live "
                    "state directly; a replay trace (Philly, Tiresias, Helios) is simulated under --current "
                    "for the eight days before --at. See docs/autosched.md, 'On your own cluster'.")
    _add_workload_options(parser, required=True)
    _add_tuner_options(parser)
    parser.add_argument("--at", metavar="TIME",
                        help="the moment to recommend for, on the log's clock (seconds or ISO date; default: the "
                             "end of the log)")
    parser.add_argument("--current", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of the configuration in force, repeatable, as itercast sim --set (e.g. "
                             "--current policy=las --current lease_s=900); default: Tiresias, 2 queues, 3,600 GPU-s")
    parser.add_argument("--alternatives", type=int, default=3, help="next best configurations to list (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_recommend)


def _add_workload_options(parser, required: bool) -> None:
    parser.add_argument("--workload", required=required, metavar="LOG",
                        help="workload CSV or cluster log (Slurm sacct, PAI, Kubernetes pods: docs/sim.md)")
    parser.add_argument("--format", choices=sorted(FORMATS), help="its format (default: from the header)")
    parser.add_argument("--gpus", type=int, required=required, help="total GPUs in the cluster")
    parser.add_argument("--gpus-per-node", type=int, required=required, help="GPUs per node")
    options.add_list_option(parser, "--vc", metavar="NAME", help="keep the jobs of these virtual clusters only")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad row instead of skipping it")


def _add_tuner_options(parser) -> None:
    parser.add_argument("--history", type=float, default=86400.0, metavar="SECONDS",
                        help="seconds of history the forecaster and estimator learn from (default 86400)")
    parser.add_argument("--horizon", type=float, default=12 * 3600.0, metavar="SECONDS",
                        help="seconds of future each what-if simulates (default 43200)")
    parser.add_argument("--budget", type=int, default=48, help="simulations per re-tune (default 48)")
    parser.add_argument("--futures", type=int, default=3, help="sampled futures per candidate (default 3)")
    parser.add_argument("--search-batch", type=int, default=TunerSettings.search_batch,
                        help="candidates the search proposes at once, before it hears their scores; at most "
                             "this many simulate in parallel, and the result does not depend on --workers "
                             f"(default {TunerSettings.search_batch})")
    parser.add_argument("--margin", type=float, default=0.05,
                        help="relative gain a candidate needs over the incumbent to be adopted (default 0.05)")
    parser.add_argument("--objective", choices=OBJECTIVES, default=TunerSettings.objective,
                        help="what a re-tune minimises over its what-ifs: the jobs' average JCT, that average with "
                             "a tail guard (--tail-guard), p99 JCT, or the share of deadlines missed (needs a "
                             f"deadline column) (default {TunerSettings.objective})")
    parser.add_argument("--tail-guard", type=float, default=TunerSettings.tail_guard, metavar="F",
                        help="under --objective avg-jct-guarded, a candidate whose p99 JCT or long-job slowdown "
                             "exceeds the configuration in force's by more than this fraction is not adopted "
                             f"(default {TunerSettings.tail_guard})")
    parser.add_argument("--duration-model", choices=DURATION_MODELS, default=TunerSettings.duration_model,
                        help="how the forecaster learns job durations: from the finished jobs (empirical) or from "
                             "them and the running ones, censored (survival: Kaplan-Meier) "
                             f"(default {TunerSettings.duration_model})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    options.add_workers_option(parser, "each re-tune's what-if simulations")
    parser.add_argument("--dask", metavar="ADDRESS", help="run the what-if simulations on this dask.distributed scheduler")


def _settings(args, **extra) -> TunerSettings:
    return TunerSettings(history_s=args.history, horizon_s=args.horizon, budget=args.budget, futures=args.futures,
                         search_batch=args.search_batch, margin=args.margin, seed=args.seed,
                         objective=args.objective, tail_guard=args.tail_guard,
                         duration_model=args.duration_model, **extra)


def require_objective_support(objective: str, workload) -> None:
    """Refuses, before any simulation, an objective the jobs cannot support."""
    if objective == "deadline-misses" and (workload.deadlines is None or np.isnan(workload.deadlines).all()):
        raise ItercastError(f"--objective deadline-misses needs jobs with deadlines, and {workload.source} has no "
                            "deadline column (docs/sim.md)")


def _require_workload_options(args) -> None:
    missing = [f"--{name.replace('_', '-')}" for name in REQUIRED if getattr(args, name) is None]
    if missing:
        raise ItercastError(f"the following arguments are required: {', '.join(missing)}")


def run(args) -> int:
    from itercast.sched import AutoSched, SearchSpace, make_evaluator, replay

    _require_workload_options(args)
    settings = _settings(args, interval_s=args.interval, review_s=args.review, review_budget=args.review_budget)
    cluster = Cluster.homogeneous(args.gpus, args.gpus_per_node)
    workload = load_workload(args.workload, args.format, start=_time_option("--start", args.start),
                             end=_time_option("--end", args.end), virtual_cluster=args.vc, strict=args.strict,
                             estimator=args.estimator)
    _report_bad_rows(workload)
    require_objective_support(settings.objective, workload)
    tuner = AutoSched(cluster, settings, SearchSpace(), make_evaluator(options.workers_count(args.workers), args.dask))
    try:
        outcome = replay(workload, cluster, tuner=tuner, interval_s=settings.interval_s,
                         history_s=settings.history_s,
                         progress=Progress(options.progress_stream(args.quiet)))
    finally:
        tuner.close()
    summary = outcome.summary()
    notes = sorted({retune.note for retune in outcome.retunes if retune.note})
    for note in notes[:MAX_BAD_ROWS_SHOWN]:
        print(f"note: {note}", file=sys.stderr)
    summary.update(policy="autosched", gpus=cluster.total_gpus, bad_rows=len(workload.bad_rows), notes=notes)
    if args.plot:
        plot_switches(outcome, args.plot)
    if args.json:
        print(json.dumps(summary))
    else:
        _print_summary(summary)
    return 0


def run_recommend(args) -> int:
    from itercast.cli.recommend import cluster_state, print_recommendation, recommendation_json
    from itercast.sched import SearchSpace, make_evaluator
    from itercast.sched.recommend import recommend

    settings = _settings(args)
    cluster = Cluster.homogeneous(args.gpus, args.gpus_per_node)
    current = DEFAULT_CONFIG.with_settings(args.current)
    state, source = cluster_state(args, cluster, current)
    require_objective_support(settings.objective, state.history)
    result = recommend(state, cluster, current, settings=settings, space=SearchSpace(),
                       evaluator=make_evaluator(options.workers_count(args.workers), args.dask),
                       alternatives=args.alternatives)
    if args.json:
        print(json.dumps(recommendation_json(result, source)))
    else:
        print_recommendation(result, source)
    return 0


class Progress:
    """A progress bar on stderr, shown once a replay has run for a few seconds."""

    def __init__(self, stream=None, width: int = 30):
        self.stream, self.width = stream or sys.stderr, width
        self.began = time.perf_counter()
        self.first = None
        self.shown = False

    def __call__(self, now: float, last_submit: float) -> None:
        if self.first is None:
            self.first = now
        elapsed = time.perf_counter() - self.began
        if elapsed < PROGRESS_AFTER_S:
            return
        share = min(1.0, (now - self.first) / max(last_submit - self.first, 1.0))
        filled = int(share * self.width)
        self.stream.write(f"\rreplaying [{'#' * filled}{'.' * (self.width - filled)}] {share:5.1%} "
                          f"{elapsed:6.0f} s")
        self.stream.flush()
        self.shown = True

    def __del__(self):
        if self.shown:
            self.stream.write("\n")


def _print_summary(summary: dict) -> None:
    rows = [
        ("jobs", summary["jobs"]),
        ("avg / p50 / p99 JCT (s)", " / ".join(f"{summary[k]:.0f}" for k in ("avg_jct_s", "p50_jct_s", "p99_jct_s"))),
        ("avg queueing (s)", f"{summary['avg_queue_s']:.0f}"),
        ("makespan (s)", f"{summary['makespan_s']:.0f}"),
        ("GPU utilization", f"{summary['utilization']:.1%}"),
        ("re-tunes / switches", f"{summary['retunes']} / {summary['switches']}"),
        ("tuning wall (s)", f"{summary['tuning_wall_s']:.1f} (longest re-tune {summary['max_retune_wall_s']:.2f})"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("configurations:")
    for entry in summary["timeline"]:
        config = entry["config"]
        knobs = ", ".join(f"{key}={value}" for key, value in config.items() if key != "policy")
        print(f"  t={entry['time_s']:.0f}  {config['policy']}  ({knobs})")


def plot_switches(outcome, path: str) -> None:
    """Average JCT of the jobs finishing in each hour, the switches marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    result = outcome.result
    done = result.finished
    finish, jct = result.finish[done], (result.finish - result.workload.submit)[done]
    origin = float(result.workload.submit.min())
    hours = np.floor((finish - origin) / 3600.0)
    bins, inverse = np.unique(hours, return_inverse=True)
    mean_jct = np.bincount(inverse, weights=jct) / np.bincount(inverse)
    figure, axes = plt.subplots(figsize=(10, 4))
    axes.plot(bins, mean_jct / 3600.0, lw=1, label="avg JCT of jobs finishing that hour")
    for moment, config in outcome.timeline[1:]:
        axes.axvline((moment - origin) / 3600.0, color="tab:red", lw=0.8, alpha=0.6)
        axes.text((moment - origin) / 3600.0, axes.get_ylim()[1] * 0.95, config.policy, rotation=90,
                  fontsize=7, va="top", color="tab:red")
    axes.set_xlabel("hours since the first submission")
    axes.set_ylabel("JCT (h)")
    axes.set_title(f"AutoSched: {len(outcome.timeline) - 1} switches")
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
