"""AutoSched on the Philly trace, week by week, against the alternatives.

    PYTHONPATH=python python3 benchmarks/autosched_eval.py [--sizes 64,128,256] [--weeks 3-6,9-10] [--json FILE]
    PYTHONPATH=python python3 benchmarks/autosched_eval.py --from-json FILE [FILE ...]

For each cluster size, the Philly virtual clusters whose load fits it (below)
are replayed one week at a time, after a week of warm-up under the default
configuration that fills the cluster and the history (every method starts the
week from the same cluster; metrics count the week's jobs only), under:

  (a) default   the default static configuration (Tiresias, 2 queues, 3,600 GPU-s)
  (b) prototype AutoSched's prototype: hourly, the last day's finished jobs replayed
                into an empty cluster, 2-9 Tiresias queues at equal-mass percentiles
  (c) hindsight the best static configuration of the same search space for that
                week, found with TPE on the real week (--hindsight-trials replays),
                adopted at the window's start like the tuners' first switch
  (d) oracle    AutoSched given the real durations and the real jobs to come
  (e) autosched AutoSched (forecast, live snapshot, TPE, 5% margin)

Duration-aware policies rank by an estimator refitted hourly on finished jobs
in every method; nothing sees true durations except (d) and the hindsight
choice of (c). Windows run in parallel (--jobs), each tuner in one process,
so the tuning wall times here are not the re-tune figure: that one comes from
`itercast autosched` with its default process pool (see docs/autosched.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from itercast.sched import (
    DEFAULT_CONFIG, AutoSched, PrototypeTuner, Retune, SearchSpace, SerialEvaluator, TunerSettings, replay,
)
from itercast.sched.forecast import DURATION_MODELS
from itercast.sched.tuner import GUARDED, OBJECTIVES, THRASH_PENALTY
from itercast.sim import Cluster, SimConfig, load_workload
from itercast.sim.config import PER_SIMULATION_FIELDS

SHARED = Path(os.environ.get("ITERCAST_SHARED", Path(__file__).resolve().parents[2] / "shared"))
WEEK, DAY = 7 * 86400.0, 86400.0
# Virtual clusters whose summed weekly load (GPU-seconds submitted / week)
# averages close to each cluster's size: a cluster that queues in busy weeks
# and drains in quiet ones.
VIRTUAL_CLUSTERS = {
    64: ("6214e9", "103959", "ed69ec"),
    128: ("6214e9", "6c71a0", "103959", "ed69ec", "11cb48"),
    256: ("6214e9", "6c71a0", "103959", "ed69ec", "11cb48", "2869ce", "7f04ca"),
}
# A week of warm-up under the default configuration: the cluster is as busy as
# it really was, and the history holds long jobs that finished (a shorter one
# would show the forecaster only durations shorter than the warm-up).
WARMUP_S = WEEK
METHODS = ("default", "prototype", "hindsight", "oracle", "autosched")
# What each arm reports: the average, and the tail an average can hide.
OUTCOME_KEYS = ("avg_jct_s", "p50_jct_s", "p99_jct_s", "max_jct_s", "avg_queue_s", "long_jobs_slowdown", "utilization")
TAIL_KEYS = ("p50_jct_s", "p99_jct_s", "max_jct_s", "avg_queue_s", "long_jobs_slowdown")


def window(jobs, gpus: int, week: int, warmup_s: float = WARMUP_S):
    """A week of the virtual clusters sized for ``gpus`` (every virtual cluster for a size not listed,
    e.g. 2,048 GPUs: all of Philly), after ``warmup_s`` of warm-up."""
    vcs = VIRTUAL_CLUSTERS.get(gpus, np.unique(jobs.virtual_cluster))
    selected = jobs.subset(np.isin(jobs.virtual_cluster, vcs) & (jobs.gpus <= gpus))
    start = float(jobs.submit.min()) + week * WEEK
    return selected.window(start - warmup_s, start + WEEK), start


def run_window(task) -> dict:
    path, gpus, week, settings, trials = task
    jobs, start = window(load_workload(path), gpus, week)
    row = {"gpus": gpus, "week": week, "jobs": int((jobs.submit >= start).sum())}
    return run_arms(jobs, Cluster.homogeneous(gpus, 8), start, settings, trials, row)


def run_arms(jobs, cluster, start, settings, trials, row: dict, base: SimConfig = DEFAULT_CONFIG) -> dict:
    """The five arms on ``jobs`` (warm-up included) from ``start``, added to ``row``; every replay
    starts under ``base``, whose per-simulation fields (e.g. gpu_type_choice) hold throughout."""

    def measure(name, config=base, tuner=None):
        began = time.perf_counter()
        outcome = replay(jobs, cluster, config, tuner=tuner, tune_from=start, measure_from=start)
        summary = outcome.summary()
        row[name] = {**{key: summary[key] for key in OUTCOME_KEYS}, "switches": summary["switches"],
                     "tuning_wall_s": summary["tuning_wall_s"], "wall_s": time.perf_counter() - began,
                     "configs": sorted({entry["config"]["policy"] for entry in summary["timeline"]})}

    measure("default")
    measure("prototype", tuner=PrototypeTuner(cluster, settings))
    row["hindsight"] = hindsight(jobs, cluster, start, trials, settings.objective, settings.tail_guard, base)
    measure("oracle", tuner=AutoSched(cluster, settings, evaluator=SerialEvaluator(), clairvoyant=True))
    measure("autosched", tuner=AutoSched(cluster, settings, evaluator=SerialEvaluator()))
    return row


@dataclasses.dataclass
class SwitchAtStart:
    """A "tuner" that adopts one configuration at the first re-tune of the
    window: a static configuration for the window, from the same warmed-up
    cluster the tuners start from."""

    config: SimConfig

    def retune(self, simulation, history) -> Retune:
        fixed = {name: getattr(simulation.config, name) for name in PER_SIMULATION_FIELDS}
        chosen = dataclasses.replace(self.config, **fixed)
        return Retune(simulation.now, simulation.config, chosen, math.nan, math.nan, 0, 0.0)


def static_window(jobs, cluster, start, config, base: SimConfig = DEFAULT_CONFIG) -> dict:
    return replay(jobs, cluster, base, tuner=SwitchAtStart(config), tune_from=start,
                  measure_from=start).summary()


def hindsight(jobs, cluster, start, trials: int, objective: str = "avg-jct", tail_guard: float = 0.05,
              base: SimConfig = DEFAULT_CONFIG) -> dict:
    """The best static configuration of the window for ``objective``, by TPE over replays of it."""
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    space = SearchSpace()
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=trials // 3))
    for policy in space.policies:
        study.enqueue_trial(space.params_of(dataclasses.replace(DEFAULT_CONFIG, policy=policy)))
    began = time.perf_counter()
    reference = static_window(jobs, cluster, start, base, base) if objective == GUARDED else None
    best = (np.inf, None, None)
    for _ in range(trials):
        trial = study.ask()
        config = space.suggest(trial, base)
        summary = static_window(jobs, cluster, start, config, base)
        value = objective_value(summary, objective, reference, tail_guard)
        study.tell(trial, value)
        best = min(best, (value, config, summary), key=lambda triple: triple[0])
    _, config, summary = best
    return {**{key: summary[key] for key in OUTCOME_KEYS}, "switches": 0, "tuning_wall_s": 0.0,
            "wall_s": time.perf_counter() - began, "configs": [config.policy],
            "config": {k: v for k, v in dataclasses.asdict(config).items() if not k.startswith("estimate")}}


def objective_value(summary: dict, objective: str, reference: dict | None, tail_guard: float) -> float:
    """A window's summary scored as the tuners score their what-ifs; under the guard, a configuration whose
    p99 JCT or long-job slowdown exceeds the default's by more than ``tail_guard`` scores ten times worse."""
    if objective == "p99-jct":
        return summary["p99_jct_s"]
    if objective == "deadline-misses":
        return summary["late_fraction"]
    value = summary["avg_jct_s"]
    if objective == GUARDED and any(summary[key] > reference[key] * (1 + tail_guard)
                                    for key in ("p99_jct_s", "long_jobs_slowdown")):
        return value * THRASH_PENALTY
    return value


def parse_weeks(text: str) -> list[int]:
    """"3-6,9-10" -> [3, 4, 5, 6, 9, 10]."""
    weeks = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        weeks += range(int(low), int(high or low) + 1)
    return weeks


def report(rows: list[dict]) -> str:
    lines = ["| GPUs | week | jobs | " + " | ".join(f"{m} avg JCT s" for m in METHODS)
             + " | (e)/(c) | (e)/(a) | switches (e) |",
             "|" + "---|" * (len(METHODS) + 6)]
    for row in rows:
        jct = {m: row[m]["avg_jct_s"] for m in METHODS}
        lines.append(f"| {row['gpus']} | {row['week']} | {row['jobs']} | "
                     + " | ".join(f"{jct[m]:,.0f}" for m in METHODS)
                     + f" | {jct['autosched'] / jct['hindsight']:.3f} | {jct['autosched'] / jct['default']:.3f}"
                     f" | {row['autosched']['switches']} |")
    for gpus in sorted({row["gpus"] for row in rows}):
        mine = [row for row in rows if row["gpus"] == gpus]
        means = {m: np.mean([row[m]["avg_jct_s"] / row["default"]["avg_jct_s"] for row in mine]) for m in METHODS}
        lines.append(f"| {gpus} | mean / (a) | | " + " | ".join(f"{means[m]:.3f}" for m in METHODS) + " | | | |")
    return "\n".join(lines) + "\n\n" + tail_report(rows)


def tail_report(rows: list[dict]) -> str:
    """Per window, each arm's median, p99 and maximum JCT, average queueing and the long jobs'
    slowdown, over the default's (a); the default's own figures in seconds."""
    arms = METHODS[1:]
    lines = ["| GPUs | week | metric | (a) default | " + " | ".join(f"{arm} / (a)" for arm in arms) + " |",
             "|" + "---|" * (len(arms) + 4)]
    for row in rows:
        for key in TAIL_KEYS:
            base = row["default"].get(key)
            if base is None:  # a file written before the tail was recorded
                continue
            ratios = " | ".join(f"{row[arm][key] / base:.3f}" if base else "" for arm in arms)
            lines.append(f"| {row['gpus']} | {row['week']} | {key} | {base:,.{1 if key == 'long_jobs_slowdown' else 0}f} "
                         f"| {ratios} |")
    return "\n".join(lines)


def add_tuner_arguments(parser: argparse.ArgumentParser) -> None:
    """The tuners' settings an evaluation varies (read back by ``tuner_settings``)."""
    parser.add_argument("--review-budget", type=int, default=TunerSettings.review_budget,
                        help="simulations per daily review (0: none, the default)")
    parser.add_argument("--seed", type=int, default=TunerSettings.seed,
                        help="the tuners' seed (TPE and sampled futures); the hindsight search keeps its own")
    parser.add_argument("--objective", choices=OBJECTIVES, default=TunerSettings.objective,
                        help="what the tuners and the hindsight search minimise (docs/autosched.md)")
    parser.add_argument("--tail-guard", type=float, default=TunerSettings.tail_guard,
                        help="the guard of --objective avg-jct-guarded, a fraction")
    parser.add_argument("--duration-model", choices=DURATION_MODELS, default=TunerSettings.duration_model,
                        help="the tuners' duration model (docs/forecast.md)")


def tuner_settings(args, budget: int) -> TunerSettings:
    return TunerSettings(budget=budget, review_budget=args.review_budget, seed=args.seed, objective=args.objective,
                         tail_guard=args.tail_guard, duration_model=args.duration_model)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,128,256")
    parser.add_argument("--weeks", default="3-6,9-10",
                        help="weeks of the trace, counted from its first job: ranges, comma-separated (default: the "
                             "weeks of docs/autosched.md; 7-8 are where the tuner's settings were chosen)")
    parser.add_argument("--hindsight-trials", type=int, default=24)
    parser.add_argument("--budget", type=int, default=TunerSettings.budget)
    add_tuner_arguments(parser)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="windows simulated in parallel")
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument("--from-json", metavar="FILE", nargs="+",
                        help="print the tables of files written by --json (several: their windows together)")
    args = parser.parse_args(argv)
    if args.from_json:
        rows = [row for path in args.from_json for row in json.loads(Path(path).read_text())["rows"]]
        print(report(sorted(rows, key=lambda each: (each["gpus"], each["week"]))))
        return 0
    settings = tuner_settings(args, args.budget)
    if args.objective == "deadline-misses":
        parser.error("--objective deadline-misses: the Philly trace has no deadlines")
    path = SHARED / "workloads" / "philly_jobs.csv"
    tasks = [(path, int(gpus), week, settings, args.hindsight_trials)
             for gpus in args.sizes.split(",") for week in parse_weeks(args.weeks)]
    began = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for done in as_completed([pool.submit(run_window, task) for task in tasks]):
            row = done.result()
            rows = sorted(rows + [row], key=lambda each: (each["gpus"], each["week"]))
            print(f"done GPUs {row['gpus']} week {row['week']} after {time.perf_counter() - began:.0f} s",
                  file=sys.stderr)
            if args.json:  # after every window, so that a long run leaves what it finished
                Path(args.json).write_text(json.dumps({"settings": dataclasses.asdict(settings), "rows": rows},
                                                      indent=1))
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
