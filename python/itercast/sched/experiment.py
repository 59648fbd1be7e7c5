"""How much the iteration-time predictor is worth to a scheduler: the same
jobs scheduled with duration estimates from each estimator (oracle, this
project's predictor, the baselines, ETS-style synthetic accuracy levels),
under each duration-aware policy and AutoSched, beside the policies that need
no estimate (`itercast experiment sched-prediction`, docs/sched-prediction.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np

from itercast.sched.evaluators import make_evaluator
from itercast.sched.jobs import ORACLE, ConfiguredJobs
from itercast.sched.replay import DEFAULT_CONFIG, replay
from itercast.sched.space import SearchSpace
from itercast.sched.tuner import AutoSched, TunerSettings
from itercast.sim.cluster import Cluster
from itercast.sim.config import SimConfig
from itercast.sim.engine import simulate

logger = logging.getLogger(__name__)

# Policies that rank by the estimates, run once per estimator ("autosched": the self-configuring
# scheduler, whose search space holds SJF, SRTF and QSSF beside the estimate-free policies).
ESTIMATE_POLICIES = ("sjf", "srtf", "qssf", "lst", "autosched")
# Policies that need no estimate, run once (estimator "none").
BLIND_POLICIES = ("fifo", "las", "tiresias", "edf")
NONE = "none"
TARDINESS_KEYS = ("late_jobs", "late_fraction", "mean_lateness_s")
ROW_METRICS = ("avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_queue_s", "makespan_s", "utilization")


@dataclass
class Experiment:
    rows: list = field(default_factory=list)
    prediction_mre: dict = field(default_factory=dict)

    def relative_to_oracle(self) -> None:
        """Adds each row's average JCT over the oracle's under the same policy and GPU-type choice
        (the estimate-free policies: over the first oracle SRTF row's)."""
        oracle = {(row["policy"], row["gpu_type_choice"]): row["avg_jct_s"]
                  for row in self.rows if row["estimator"] == ORACLE}
        srtf = next((jct for (policy, _), jct in oracle.items() if policy == "srtf"), None)
        for row in self.rows:
            base = oracle.get((row["policy"], row["gpu_type_choice"]), srtf)
            row["jct_vs_oracle"] = row["avg_jct_s"] / base if base else float("nan")

    def to_dict(self) -> dict:
        return {"rows": self.rows, "prediction_mre": self.prediction_mre}

    def table(self) -> str:
        lines = [f"{'estimator':<22} {'policy':<10} {'GPU type':<10} {'avg JCT s':>10} {'vs oracle':>9} "
                 f"{'p99 JCT s':>10} {'late':>6} {'mean lateness s':>15}"]
        for row in self.rows:
            lines.append(f"{row['estimator']:<22} {row['policy']:<10} {row['gpu_type_choice']:<10} "
                         f"{row['avg_jct_s']:>10,.0f} "
                         f"{row['jct_vs_oracle']:>9.3f} {row['p99_jct_s']:>10,.0f} "
                         f"{row['tardiness']['late_jobs']:>6d} {row['tardiness']['mean_lateness_s']:>15,.0f}")
        return "\n".join(lines)


def prediction_errors(jobs: ConfiguredJobs) -> dict:
    """Per estimator: the mean relative error of its duration estimates over the jobs, and of its
    iteration times over the dataset's configurations (for the models that predicted them)."""
    durations = jobs.workload.durations
    per_config = jobs.times.mre()
    return {name: {"jobs": float(np.mean(np.abs(estimate / durations - 1))),
                   **({"configurations": per_config[name]} if name in per_config else {})}
            for name, estimate in jobs.estimates.items()}


def _row(estimator: str, policy: str, summary: dict, placement: str) -> dict:
    return {"estimator": estimator, "policy": policy, "gpu_type_choice": placement,
            **{key: summary[key] for key in ROW_METRICS},
            "tardiness": {key: summary.get(key, 0) for key in TARDINESS_KEYS}}


def run_experiment(jobs: ConfiguredJobs, cluster: Cluster, estimators=None, policies=ESTIMATE_POLICIES,
                   blind_policies=BLIND_POLICIES, autosched_estimators=None, tuner_settings=None,
                   evaluator=None, log=None) -> Experiment:
    """Every (estimator, policy) pair of ``policies`` plus each of ``blind_policies`` once.

    AutoSched runs for ``autosched_estimators`` only (default: all; it is the slow one), and for
    "none": the workload without supplied estimates, so that it uses its own estimator fitted on
    finished jobs. With several GPU types, jobs go to the type their estimator says is fastest
    among those free (``gpu_type_choice=estimated``; "none" rows: type-blind), and SRTF is also run
    type-blind for each estimator, to show what the per-type estimates are worth."""
    log = log or logger.info
    estimators = list(estimators or jobs.estimates)
    experiment = Experiment(prediction_mre=prediction_errors(jobs))
    settings = tuner_settings or TunerSettings()
    evaluator = evaluator or make_evaluator()
    several_types = len(jobs.workload.gpu_types) > 1
    by_estimate = "estimated" if several_types else "fastest"

    def autosched(workload, choice):
        tuner = AutoSched(cluster, settings, SearchSpace(), evaluator)
        return replay(workload, cluster, replace(DEFAULT_CONFIG, gpu_type_choice=choice), tuner=tuner,
                      interval_s=settings.interval_s, history_s=settings.history_s).summary()

    def record(estimator, policy, summary, choice):
        experiment.rows.append(_row(estimator, policy, summary, choice))
        log(f"{estimator} / {policy} ({choice}): average JCT {summary['avg_jct_s']:,.0f} s")

    for estimator in estimators:
        workload = jobs.with_estimator(estimator)
        for policy in policies:
            if policy == "autosched":
                if autosched_estimators is None or estimator in autosched_estimators:
                    record(estimator, policy, autosched(workload, by_estimate), by_estimate)
                continue
            for choice in (by_estimate, "blind") if several_types and policy == "srtf" else (by_estimate,):
                config = SimConfig(policy=policy, estimate="supplied", gpu_type_choice=choice)
                record(estimator, policy, simulate(workload, cluster, config).summary(), choice)
    unestimated = replace(jobs.with_estimator(ORACLE), type_estimates=None)
    blind_choice = "blind" if several_types else "fastest"
    for policy in blind_policies:
        config = replace(DEFAULT_CONFIG if policy == "tiresias" else SimConfig(policy=policy),
                         gpu_type_choice=blind_choice)
        record(NONE, policy, simulate(unestimated, cluster, config).summary(), blind_choice)
    if "autosched" in policies:
        record(NONE, "autosched", autosched(replace(unestimated, estimates=None), blind_choice), blind_choice)
    experiment.relative_to_oracle()
    return experiment


def plot(experiment: Experiment, path: str, title: str = "") -> None:
    """Average JCT relative to the oracle's under the same policy: one group of bars per policy, one
    bar per estimator; the estimate-free policies as dashed lines against oracle SRTF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = experiment.rows
    policies = [p for p in ESTIMATE_POLICIES if any(row["policy"] == p and row["estimator"] != NONE for row in rows)]
    estimators = list(dict.fromkeys(row["estimator"] for row in rows if row["estimator"] != NONE))
    value = {(row["estimator"], row["policy"]): row["jct_vs_oracle"] for row in rows
             if row["gpu_type_choice"] != "blind" or row["estimator"] == NONE}
    figure, axes = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(estimators))
    for k, estimator in enumerate(estimators):
        xs = [i + k * width for i, p in enumerate(policies) if (estimator, p) in value]
        ys = [value[(estimator, p)] for p in policies if (estimator, p) in value]
        axes.bar(xs, ys, width, label=estimator)
    for policy, style in zip(BLIND_POLICIES, ("--", ":", "-.", (0, (1, 3)))):
        if (NONE, policy) in value:
            axes.axhline(value[(NONE, policy)], color="black", lw=0.8, ls=style, label=f"{policy} (vs oracle SRTF)")
    axes.axhline(1.0, color="grey", lw=0.5)
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(policies))], policies)
    axes.set_ylabel("average JCT / oracle's, same policy")
    axes.set_title(title or "scheduling with predicted iteration times")
    axes.legend(fontsize=7, ncol=2, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
