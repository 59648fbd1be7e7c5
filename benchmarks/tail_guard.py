"""What the tail guard costs and buys: AutoSched on every shared Sia workload, unguarded and guarded.

    PYTHONPATH=python python3 benchmarks/tail_guard.py [--guards 0.05,0.10] [--predictions CSV]

Each Sia workload (160 jobs, 64 GPUs; each application its closest zoo model, iteration times from the
bundled held-out predictions) is replayed by AutoSched fed the true durations (`oracle`: so that what
moves is the objective, not an estimator's error), once with ``--objective avg-jct`` and once per guard
with ``avg-jct-guarded``. Prints average and p99 JCT per run and the guarded over the unguarded. JCTs
are simulated: the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

from sched_prediction_all import sia_workloads
from itercast.sched import SerialEvaluator, TunerSettings
from itercast.sched.experiment import run_experiment
from itercast.sched.jobs import ORACLE, IterationTimes, configure
from itercast.sim import Cluster

ROOT = Path(__file__).resolve().parents[1]


def autosched_outcome(jobs, cluster, settings) -> tuple[float, float]:
    experiment = run_experiment(jobs, cluster, estimators=[ORACLE], policies=("autosched",), blind_policies=(),
                                autosched_estimators=[ORACLE], tuner_settings=settings,
                                evaluator=SerialEvaluator(), log=lambda _: None)
    row = next(row for row in experiment.rows if row["estimator"] == ORACLE)
    return row["avg_jct_s"], row["p99_jct_s"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--guards", default="0.05,0.10")
    parser.add_argument("--predictions", default=str(ROOT / "data" / "cpu-zoo-1207pr-predictions.csv"))
    args = parser.parse_args(argv)
    guards = [float(text) for text in args.guards.split(",")]
    times = IterationTimes.read(args.predictions)
    unguarded = TunerSettings(objective="avg-jct")
    header = "| workload | unguarded avg / p99 JCT s | " + " | ".join(
        f"guard {guard:.2f}: avg / p99 (ratios)" for guard in guards) + " |"
    print(header + "\n|" + "---|" * (len(guards) + 2))
    ratios = {guard: [] for guard in guards}
    for name, path, options in sia_workloads():
        gpus, per_node = int(options[options.index("--gpus") + 1]), int(options[options.index("--gpus-per-node") + 1])
        jobs, cluster = configure(path, times, 0), Cluster.homogeneous(gpus, per_node)
        base = autosched_outcome(jobs, cluster, unguarded)
        cells = []
        for guard in guards:
            guarded = autosched_outcome(jobs, cluster, dataclasses.replace(unguarded, objective="avg-jct-guarded",
                                                                           tail_guard=guard))
            ratios[guard].append(guarded[0] / base[0])
            cells.append(f"{guarded[0]:,.0f} / {guarded[1]:,.0f} ({guarded[0] / base[0]:.3f} / "
                         f"{guarded[1] / base[1]:.3f})")
        print(f"| {name} | {base[0]:,.0f} / {base[1]:,.0f} | " + " | ".join(cells) + " |", flush=True)
    for guard in guards:
        values = np.array(ratios[guard])
        print(f"guard {guard:.2f}: average JCT over the unguarded's mean {values.mean():.3f}, "
              f"max {values.max():.3f}, unchanged on {int(np.sum(np.isclose(values, 1.0)))} of {len(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
