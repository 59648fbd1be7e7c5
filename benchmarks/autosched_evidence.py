"""AutoSched against the same four alternatives on four families of windows, as one table.

    PYTHONPATH=python:benchmarks python3 benchmarks/autosched_evidence.py [--families philly,vcs,drift,hetero]
        [--jobs N] [--json FILE] [--quick] [--objective NAME]
    PYTHONPATH=python:benchmarks python3 benchmarks/autosched_evidence.py --from-json FILE [FILE ...]

Every window is run as benchmarks/autosched_eval.py runs Philly's weeks (its
functions, imported): a week of warm-up under the default configuration, then
the measured week under (a) default, (b) prototype, (c) hindsight best static,
(d) AutoSched given the real future, (e) AutoSched. The families
(docs/autosched-evidence.md):

  philly  autosched_eval's windows: its virtual-cluster sets on 64, 128 and 256 GPUs, weeks 3-6 and 9-10.
  vcs     each Philly virtual cluster with at least 2,000 jobs alone on a cluster of the smallest multiple
          of 8 GPUs at or above its median weekly offered load (GPU-seconds submitted per week / week,
          median over the trace's full weeks in which it submitted a job); of weeks 3-6 and 9-10 those in
          which it submitted at least 500 jobs, ranked by offered load: the (lower) median one and the next
          busier one (its typical weeks; one when only one qualifies).
  drift   itercast.sched.drift's scenarios (SCENARIOS: name, kind, factor, drift point, shape, seed) on
          the Philly window of 128 GPUs, week 9.
  hetero  the 128-GPU virtual clusters on two GPU types, 64 + 64 GPUs: each job runs a configuration
          measured on both bundled hardware targets (one and two threads of the AMD EPYC,
          data/cpu-zoo-1207pr-predictions.csv and data/cpu-zoo-t2-1207-predictions.csv), its Philly
          duration on the first; every policy ranks by lightgbm's held-out estimates and places by
          per-type estimates (gpu_type_choice=estimated). Weeks 3-6 and 9-10.

--quick runs one small window per family with a budget of 12 simulations per re-tune and 6 hindsight
trials: a smoke run of minutes, not evidence. The goals the summary checks: mean (e)/(c) <= 1.00; every
window's (e)/(d) <= 1.05; (e)/(a) <= 1.01 on the objective; (e)'s p99 JCT <= 1.05 x (a)'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

import autosched_eval as ae
from itercast.sched import DEFAULT_CONFIG, TunerSettings
from itercast.sched.drift import SCENARIOS, drift, scenario, shares
from itercast.sched.jobs import IterationTimes, configure_trace
from itercast.sched.tuner import GUARDED
from itercast.sim import Cluster, GpuPool, load_workload

REPO = Path(__file__).resolve().parents[1]
PHILLY = ae.SHARED / "workloads" / "philly_jobs.csv"
FAMILIES = ("philly", "vcs", "drift", "hetero")
METHODS = ae.METHODS
LETTERS = dict(zip(METHODS, "abcde"))

# vcs: a virtual cluster needs this many jobs in the trace to be replayed alone.
VC_MIN_JOBS = 2000
VC_WEEKS = (3, 4, 5, 6, 9, 10)  # autosched_eval's held-out weeks; 7-8 chose the tuner's settings
VC_WEEK_MIN_JOBS = 500          # a week of the VC counts when it submitted this many jobs in it
# drift: the base window the scenarios change.
DRIFT_BASE = (128, 9)
# hetero: the virtual clusters of autosched_eval's 128-GPU set on two pools of 64.
TARGET_PREDICTIONS = (REPO / "data" / "cpu-zoo-1207pr-predictions.csv",
                      REPO / "data" / "cpu-zoo-t2-1207-predictions.csv")
TARGETS = ("cpu:AMD EPYC:1t", "cpu:AMD EPYC:2t")
HETERO_SET, HETERO_POOL_GPUS, HETERO_WEEKS = 128, 64, VC_WEEKS
HETERO_ESTIMATOR, HETERO_SEED = "lightgbm", 0
# --quick: one small window per family.
QUICK = {"philly": [(64, 10)], "drift": ("rate-step-up", (64, 10)), "hetero": (64, 32, 10)}
QUICK_BUDGET, QUICK_TRIALS = 12, 6

GOALS = {"mean (e)/(c)": 1.00, "(e)/(d)": 1.05, "(e)/(a)": 1.01, "p99 (e)/(a)": 1.05}


# ---------------------------------------------------------------- the windows

def vc_plan(jobs, min_jobs: int = VC_MIN_JOBS) -> list[dict]:
    """The vcs family: per virtual cluster with at least ``min_jobs`` jobs, its cluster size and weeks."""
    first = float(jobs.submit.min())
    full_weeks = int((float(jobs.submit.max()) - first) // ae.WEEK)
    week_of = ((jobs.submit - first) // ae.WEEK).astype(np.int64)
    names, counts = np.unique(jobs.virtual_cluster, return_counts=True)
    plan = []
    for name, count in sorted(zip(names, counts), key=lambda pair: (-pair[1], pair[0])):
        if count < min_jobs:
            continue
        mine = (jobs.virtual_cluster == name) & (week_of < full_weeks)
        load = np.bincount(week_of[mine], weights=(jobs.gpus * jobs.duration)[mine], minlength=full_weeks) / ae.WEEK
        counts_by_week = np.bincount(week_of[mine], minlength=full_weeks)
        active = counts_by_week > 0
        median = float(np.median(load[active]))
        gpus = max(8, 8 * math.ceil(median / 8))
        ranked = sorted((week for week in VC_WEEKS if counts_by_week[week] >= VC_WEEK_MIN_JOBS),
                        key=lambda week: (load[week], week))
        if not ranked:
            continue
        middle = (len(ranked) - 1) // 2  # the (lower) median week by offered load, and the next busier one
        weeks = sorted(ranked[middle:middle + 2])
        plan.append({"vc": str(name), "trace_jobs": int(count), "median_load_gpus": round(median, 2), "gpus": gpus,
                     "weeks": weeks, "week_load_gpus": {str(week): round(float(load[week]), 2) for week in VC_WEEKS},
                     "week_jobs": {str(week): int(counts_by_week[week]) for week in VC_WEEKS},
                     "too_large_jobs": int(((jobs.virtual_cluster == name) & (jobs.gpus > gpus)).sum())})
    return plan


def windows(families, quick: bool) -> list[dict]:
    """One spec per window, in table order; each is built again in the worker that runs it."""
    specs = []
    if "philly" in families:
        for gpus, week in QUICK["philly"] if quick else [(g, w) for g in (64, 128, 256) for w in VC_WEEKS]:
            specs.append({"family": "philly", "window": f"{gpus} GPUs, week {week}", "gpus": gpus, "week": week})
    if "vcs" in families:
        plan = vc_plan(load_workload(PHILLY))
        chosen = [(entry, week) for entry in plan for week in entry["weeks"]]
        if quick:  # the lightest of the chosen weeks
            chosen = [min(chosen, key=lambda pair: pair[0]["week_load_gpus"][str(pair[1])])]
        for entry, week in chosen:
            specs.append({"family": "vcs", "window": f"VC {entry['vc']} on {entry['gpus']} GPUs, week {week}",
                          "week": week, **{key: value for key, value in entry.items() if key != "weeks"},
                          "vc_weeks": entry["weeks"]})
    if "drift" in families:
        names, base = ([QUICK["drift"][0]], QUICK["drift"][1]) if quick else ([s.name for s in SCENARIOS], DRIFT_BASE)
        for name in names:
            specs.append({"family": "drift", "window": f"{name} on {base[0]} GPUs, week {base[1]}",
                          "scenario": scenario(name).to_dict(), "gpus": base[0], "week": base[1]})
    if "hetero" in families:
        plan = [QUICK["hetero"]] if quick else [(HETERO_SET, HETERO_POOL_GPUS, week) for week in HETERO_WEEKS]
        for vc_set, pool, week in plan:
            specs.append({"family": "hetero", "window": f"{vc_set}-GPU VCs on {pool} 1t + {pool} 2t, week {week}",
                          "vc_set": vc_set, "pool_gpus": pool, "week": week})
    for order, spec in enumerate(specs):
        spec["order"] = order
    return specs


def two_targets() -> tuple[IterationTimes, dict]:
    """The bundled held-out predictions of two hardware targets (one and two threads of the AMD EPYC),
    each predicted by models that never saw the configuration's architecture; the configurations
    measured on both, the first target first."""
    times = IterationTimes.combine([IterationTimes.read(path) for path in TARGET_PREDICTIONS])
    first, second = times.aligned(TARGETS)
    ratio = second.measured_ms / first.measured_ms
    return times, {
        "predictions": [path.name for path in TARGET_PREDICTIONS], "configurations": len(first),
        "ratio_percentiles": {str(p): round(float(np.percentile(ratio, p)), 3) for p in (5, 25, 50, 75, 95)},
        "second_slower_share": round(float(np.mean(ratio > 1)), 3)}


def build(spec: dict):
    """(jobs, cluster, start, base configuration, what the row records about the window)."""
    family = spec["family"]
    if family == "philly":  # autosched_eval's own window
        jobs, start = ae.window(load_workload(PHILLY), spec["gpus"], spec["week"])
        return jobs, Cluster.homogeneous(spec["gpus"], 8), start, DEFAULT_CONFIG, {}
    if family == "vcs":
        jobs = load_workload(PHILLY)
        start = float(jobs.submit.min()) + spec["week"] * ae.WEEK
        jobs = jobs.subset((jobs.virtual_cluster == spec["vc"]) & (jobs.gpus <= spec["gpus"]))
        return jobs.window(start - ae.WARMUP_S, start + ae.WEEK), Cluster.homogeneous(spec["gpus"], 8), start, \
            DEFAULT_CONFIG, {}
    if family == "drift":
        jobs, start = ae.window(load_workload(PHILLY), spec["gpus"], spec["week"])
        chosen = scenario(spec["scenario"]["name"])
        drifted = drift(jobs, start, start + ae.WEEK, chosen)
        point = chosen.drift_point(start, start + ae.WEEK)
        return drifted, Cluster.homogeneous(spec["gpus"], 8), start, DEFAULT_CONFIG, {
            "after_drift_point": {"base": shares(jobs, point, start + ae.WEEK),
                                  "drifted": shares(drifted, point, start + ae.WEEK)}}
    if family == "hetero":
        jobs, start = ae.window(load_workload(PHILLY), spec["vc_set"], spec["week"])
        times, targets = two_targets()
        configured = configure_trace(jobs, times, seed=HETERO_SEED, hardware=list(TARGETS))
        workload = dataclasses.replace(configured.with_estimator(HETERO_ESTIMATOR), deadlines=None)
        pools = tuple(GpuPool(kind, spec["pool_gpus"] // 8, 8) for kind in workload.gpu_types)
        base = dataclasses.replace(DEFAULT_CONFIG, gpu_type_choice="estimated")
        measured = workload.submit >= start
        mre = np.abs(workload.type_estimates[measured] / workload.durations[measured] - 1).mean(axis=0)
        return workload, Cluster(pools), start, base, {
            "gpu_types": list(workload.gpu_types), "estimator": HETERO_ESTIMATOR, "configuration_seed": HETERO_SEED,
            "estimate_mre_per_type": [round(float(value), 4) for value in mre], "targets": targets,
            "jobs_faster_on_second": round(float(np.mean(workload.durations[measured, 1]
                                                         < workload.durations[measured, 0])), 3)}
    raise ValueError(f"unknown family {family!r}")


def run_task(task) -> dict:
    spec, settings, trials = task
    began = time.perf_counter()
    jobs, cluster, start, base, extra = build(spec)
    row = {"gpus": cluster.total_gpus, "week": spec["week"], "jobs": int((jobs.submit >= start).sum())}
    row = ae.run_arms(jobs, cluster, start, settings, trials, row, base)
    row.update(extra)
    row.update({key: value for key, value in spec.items() if key not in row})
    row["wall_s"] = time.perf_counter() - began
    return row


# ---------------------------------------------------------------- the tables

def objective_key(objective: str) -> str:
    """The arm figure a window is judged by: the tuners' objective (the guarded one by its average)."""
    return {"avg-jct": "avg_jct_s", GUARDED: "avg_jct_s", "p99-jct": "p99_jct_s"}[objective]


def ratios(row: dict, key: str) -> dict:
    e = row["autosched"]
    return {"(e)/(c)": e[key] / row["hindsight"][key], "(e)/(d)": e[key] / row["oracle"][key],
            "(e)/(a)": e[key] / row["default"][key],
            "p99 (e)/(a)": e["p99_jct_s"] / row["default"]["p99_jct_s"],
            "slowdown (e)/(a)": e["long_jobs_slowdown"] / row["default"]["long_jobs_slowdown"]}


def report(rows: list[dict], objective: str) -> str:
    key = objective_key(objective)
    what = "" if key == "avg_jct_s" else f" ({key})"
    lines = ["| family | window | jobs | " + " | ".join(f"({LETTERS[m]}) {m} avg JCT s" for m in METHODS)
             + f" | (e)/(c){what} | (e)/(d){what} | (e)/(a){what} | p99 JCT (e)/(a) | long-job slowdown (e)/(a)"
               " | switches (e) |",
             "|" + "---|" * (len(METHODS) + 9)]
    for row in rows:
        r = ratios(row, key)
        lines.append(f"| {row['family']} | {row['window']} | {row['jobs']} | "
                     + " | ".join(f"{row[m]['avg_jct_s']:,.0f}" for m in METHODS)
                     + "".join(f" | {r[name]:.3f}" for name in ("(e)/(c)", "(e)/(d)", "(e)/(a)", "p99 (e)/(a)",
                                                                   "slowdown (e)/(a)"))
                     + f" | {row['autosched']['switches']} |")
    return "\n".join(lines) + "\n\n" + summary(rows, objective)


def summary(rows: list[dict], objective: str) -> str:
    """Per family and overall, against the goals."""
    key = objective_key(objective)
    lines = [f"Goals (objective {objective}, judged by {key}): mean (e)/(c) <= {GOALS['mean (e)/(c)']:.2f}; every "
             f"window (e)/(d) <= {GOALS['(e)/(d)']:.2f}, (e)/(a) <= {GOALS['(e)/(a)']:.2f}, "
             f"p99 JCT (e)/(a) <= {GOALS['p99 (e)/(a)']:.2f}.", "",
             "| family | windows | mean (e)/(c) | (e)/(d) <= 1.05 | (e)/(a) <= 1.01 | p99 (e)/(a) <= 1.05 | "
             "mean (e)/(a) | all goals met |",
             "|---|---|---|---|---|---|---|---|"]
    groups = [(family, [row for row in rows if row["family"] == family]) for family in FAMILIES]
    for family, mine in [group for group in groups if group[1]] + [("overall", rows)]:
        if not mine:
            continue
        r = [ratios(row, key) for row in mine]
        mean_c = float(np.mean([each["(e)/(c)"] for each in r]))
        checks = {"mean": mean_c <= GOALS["mean (e)/(c)"]}
        cells = []
        for name in ("(e)/(d)", "(e)/(a)", "p99 (e)/(a)"):
            values = [each[name] for each in r]
            met = sum(value <= GOALS[name] for value in values)
            checks[name] = met == len(values)
            cells.append(f"{met}/{len(values)} (worst {max(values):.3f})")
        lines.append(f"| {family} | {len(mine)} | {mean_c:.3f} {'yes' if checks['mean'] else 'no'} | "
                     + " | ".join(cells)
                     + f" | {np.mean([each['(e)/(a)'] for each in r]):.3f}"
                     f" | {'yes' if all(checks.values()) else 'no'} |")
    return "\n".join(lines)


def as_evidence_row(row: dict) -> dict:
    """A row of autosched_eval's --json (no family) as this script's philly row."""
    if "family" in row:
        return row
    return {**row, "family": "philly", "window": f"{row['gpus']} GPUs, week {row['week']}"}


def ordered(rows: list[dict]) -> list[dict]:
    def key(row):
        place = (row["gpus"], row["week"]) if row["family"] == "philly" else (row.get("order", 0), 0)
        return FAMILIES.index(row["family"]), place, row["window"]

    return sorted(rows, key=key)


# ---------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default=",".join(FAMILIES), help=f"some of {', '.join(FAMILIES)}")
    parser.add_argument("--quick", action="store_true",
                        help=f"one small window per family, a budget of {QUICK_BUDGET} and {QUICK_TRIALS} hindsight "
                             "trials: a smoke run")
    parser.add_argument("--hindsight-trials", type=int, default=None, help="default 24 (--quick: 6)")
    parser.add_argument("--budget", type=int, default=None, help=f"default {TunerSettings.budget} (--quick: 12)")
    ae.add_tuner_arguments(parser)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="windows simulated in parallel")
    parser.add_argument("--json", metavar="FILE", help="write every figure here (after every window)")
    parser.add_argument("--from-json", metavar="FILE", nargs="+",
                        help="print the tables of files written by --json, or by autosched_eval.py --json (its rows "
                             "are the philly family)")
    args = parser.parse_args(argv)
    if args.from_json:
        files = [json.loads(Path(path).read_text()) for path in args.from_json]
        objectives = {data["settings"].get("objective", "avg-jct") for data in files}
        if len(objectives) > 1:
            parser.error(f"the files were run for different objectives ({', '.join(sorted(objectives))})")
        differ = sorted({key for data in files for key, value in data["settings"].items()
                         if any(other["settings"].get(key) != value for other in files)})
        if differ:
            print(f"note: the files' tuner settings differ in {', '.join(differ)}", file=sys.stderr)
        rows = [as_evidence_row(row) for data in files for row in data["rows"]]
        print(report(ordered(rows), objectives.pop()))
        return 0
    families = [name.strip() for name in args.families.split(",") if name.strip()]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        parser.error(f"--families takes some of {', '.join(FAMILIES)}; unknown: {', '.join(unknown) or '(none given)'}")
    if args.objective == "deadline-misses":
        parser.error("--objective deadline-misses: no family's jobs have deadlines (the Philly trace has none, and "
                     "the hetero family drops the drawn ones)")
    budget = args.budget if args.budget is not None else QUICK_BUDGET if args.quick else TunerSettings.budget
    trials = args.hindsight_trials if args.hindsight_trials is not None else QUICK_TRIALS if args.quick else 24
    if trials < 1:
        parser.error("--hindsight-trials must be at least 1")
    settings = ae.tuner_settings(args, budget)
    specs = windows(families, args.quick)
    began = time.perf_counter()
    rows: list[dict] = []
    header = {"settings": dataclasses.asdict(settings), "hindsight_trials": trials, "quick": args.quick,
              "families": families, "drift_scenarios": [each.to_dict() for each in SCENARIOS]}
    with ProcessPoolExecutor(max(1, min(args.jobs, len(specs)))) as pool:
        for done in as_completed([pool.submit(run_task, (spec, settings, trials)) for spec in specs]):
            row = done.result()
            rows = ordered(rows + [row])
            print(f"done {row['family']}: {row['window']} after {time.perf_counter() - began:.0f} s",
                  file=sys.stderr)
            if args.json:
                Path(args.json).write_text(json.dumps({**header, "wall_s": time.perf_counter() - began,
                                                       "rows": rows}, indent=1))
    print(report(rows, args.objective))
    print(f"\n{len(rows)} windows in {time.perf_counter() - began:.0f} s wall ({args.jobs} in parallel)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
