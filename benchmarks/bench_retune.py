"""Wall time of AutoSched's re-tunes with the default process pool.

    PYTHONPATH=python python3 benchmarks/bench_retune.py [--gpus 256] [--week 5] [--days 7] [--workers N]

Replays one week of benchmarks/autosched_eval.py's workload for that cluster
size (after its week of warm-up; ``--days`` keeps that many days of its
submissions) with AutoSched at its defaults and prints the re-tune wall times:
every re-tune counts (forecast, what-ifs, search, validation), nothing else does.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from autosched_eval import SHARED, window
from itercast.sched import AutoSched, ProcessEvaluator, TunerSettings, replay
from itercast.sim import Cluster, load_workload


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--week", type=int, default=5)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--workers", type=int)
    args = parser.parse_args(argv)
    jobs, start = window(load_workload(SHARED / "workloads" / "philly_jobs.csv"), args.gpus, args.week)
    jobs = jobs.window(None, start + args.days * 86400.0)
    cluster = Cluster.homogeneous(args.gpus, 8)
    tuner = AutoSched(cluster, TunerSettings(), evaluator=ProcessEvaluator(args.workers))
    outcome = replay(jobs, cluster, tuner=tuner, tune_from=start, measure_from=start)
    walls = np.array([retune.wall_s for retune in outcome.retunes if retune.simulations])
    live = [retune.simulations for retune in outcome.retunes if retune.simulations]
    print(json.dumps({
        "gpus": args.gpus, "week": args.week, "days": args.days, "workers": tuner.evaluator.workers, "retunes": len(walls),
        "simulations_per_retune": float(np.mean(live)), "mean_s": float(walls.mean()),
        "p50_s": float(np.median(walls)), "p95_s": float(np.percentile(walls, 95)), "max_s": float(walls.max()),
        "switches": outcome.switches, "avg_jct_s": outcome.summary()["avg_jct_s"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
