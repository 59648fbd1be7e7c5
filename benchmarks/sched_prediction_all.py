"""`itercast experiment sched-prediction` on Philly and every shared Sia workload, as one table.

    PYTHONPATH=python python3 benchmarks/sched_prediction_all.py --dataset DIR [--json FILE] [--plots DIR] [--seeds K]
        [--sia-family-seeds K [--family-only]]

Philly: virtual clusters 6214e9, 103959 and ed69ec, the three days from
2017-10-02 10:30 UTC, on 128 GPUs (the cluster queues: FIFO's average JCT is
~1.7x oracle SRTF's). Sia: each of ../shared/workloads/sia-*/workload-*.csv
on 64 GPUs. Each row: average JCT over the oracle's under the same policy.

A Philly job's configuration is a seeded draw, and non-preemptive SJF swings by a few percent with it;
``--seeds K`` also runs Philly at seeds 1..K-1 (estimate-driven policies, no AutoSched) and prints each
estimator's mean, min and max over the K draws.

A Sia workload maps each application to one zoo model, so an estimator's error is one factor per
application and reorders jobs only across applications. ``--sia-family-seeds K`` also runs every Sia
workload K times with each job's model drawn from its application's zoo family (``--sia-models family``,
seeds 0..K-1, no AutoSched), where jobs of one application differ, and prints per workload the mean
over the draws and in how many draws this project's predictor beat both OpBased and the ETS reference.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

from itercast.cli import main as itercast
from itercast.sched.tuner import OBJECTIVES

SHARED = Path(os.environ.get("ITERCAST_SHARED", Path(__file__).resolve().parents[2] / "shared"))
PHILLY = ["--vc", "6214e9", "--vc", "103959", "--vc", "ed69ec", "--start", "2017-10-02T10:30:41",
          "--end", "2017-10-05T10:30:41", "--gpus", "128", "--gpus-per-node", "8"]
PHILLY_NAME, PHILLY_PATH = "philly 3 VCs, 3 days", SHARED / "workloads" / "philly_jobs.csv"
SIA = ["--gpus", "64", "--gpus-per-node", "8"]
ESTIMATORS = ("lightgbm", "opbased", "ets", "linear", "median", "90% accurate", "75% accurate", "50% accurate",
              "25% accurate")
POLICIES = ("sjf", "srtf", "qssf", "autosched")


def sia_workloads() -> list[tuple[str, Path, list[str]]]:
    return [(f"{path.parent.name}/{path.stem}", path, SIA)
            for path in sorted((SHARED / "workloads").glob("sia-*/workload-*.csv"))]


def workloads() -> list[tuple[str, Path, list[str]]]:
    return [(PHILLY_NAME, PHILLY_PATH, PHILLY), *sia_workloads()]


SEEDED_POLICIES = ("sjf", "srtf")
SEEDS_KEY = "philly, other seeds"  # --json: {seed: result} of the extra Philly draws
FAMILY_KEY = "sia, family draws"  # --json: {workload: {seed: result}} of --sia-family-seeds
COMPARED = ("lightgbm", "opbased", "ets")  # this project's predictor, then the baselines it must beat


def run(dataset: str, path: Path, options: list[str], plot: str | None) -> dict:
    out = io.StringIO()
    argv = ["experiment", "sched-prediction", "--dataset", dataset, "--workload", str(path), *options, "--json"]
    with contextlib.redirect_stdout(out):
        code = itercast(argv + (["--plot", plot] if plot else []))
    if code:
        raise SystemExit(f"itercast {' '.join(argv)} exited with {code}")
    return json.loads(out.getvalue())


def table(results: dict) -> str:
    lines = ["| workload | policy | oracle avg JCT s | " + " | ".join(ESTIMATORS) + " | FIFO | Tiresias |",
             "|" + "---|" * (len(ESTIMATORS) + 5)]
    for name, result in per_workload(results):
        rows = {(row["estimator"], row["policy"]): row for row in result["rows"]}
        for policy in POLICIES:
            if ("oracle", policy) not in rows:
                continue
            cells = [f"{rows[(e, policy)]['jct_vs_oracle']:.3f}" if (e, policy) in rows else "" for e in ESTIMATORS]
            blind = [f"{rows[('none', p)]['avg_jct_s'] / rows[('oracle', policy)]['avg_jct_s']:.2f}"
                     for p in ("fifo", "tiresias")]
            lines.append(f"| {name} | {policy} | {rows[('oracle', policy)]['avg_jct_s']:,.0f} | "
                         + " | ".join(cells) + " | " + " | ".join(blind) + " |")
    return "\n".join(lines)


def per_workload(results: dict):
    return [(name, result) for name, result in results.items() if name not in (SEEDS_KEY, FAMILY_KEY)]


def ratios(runs: list[dict], estimator: str, policy: str) -> list[float]:
    """Average JCT over the oracle's of ``estimator`` under ``policy``, one per run."""
    return [row["jct_vs_oracle"] for run in runs for row in run["rows"]
            if (row["estimator"], row["policy"]) == (estimator, policy)]


def every_draw(runs: list[dict], estimator: str, policy: str, where: str, optional: bool = False) -> list[float]:
    """``ratios``, one per run, or an error: statistics over some of the draws would be read as over all.
    An ``optional`` estimator may be absent from every run (an empty cell)."""
    values = ratios(runs, estimator, policy)
    if len(values) != len(runs) and not (optional and not values):
        raise ValueError(f"{where}, {policy}: {estimator} has a result in {len(values)} of {len(runs)} draws; "
                         "every draw needs one (rerun the missing draws)")
    return values


def spread(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f} ({min(values):.3f}-{max(values):.3f})" if values else ""


def over_seeds(runs: list[dict]) -> str:
    """Each estimator's average JCT over the oracle's, mean (min-max) over the runs."""
    lines = [f"| policy ({len(runs)} draws) | " + " | ".join(ESTIMATORS) + " |", "|" + "---|" * (len(ESTIMATORS) + 1)]
    for policy in SEEDED_POLICIES:
        cells = [spread(every_draw(runs, e, policy, PHILLY_NAME, optional=True)) for e in ESTIMATORS]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def family_draws(by_workload: dict) -> str:
    """Per Sia workload and policy, over its family draws: each compared estimator's mean (min-max), and
    the draws in which the first beat every other (a tie is not a win); each must have run in every draw."""
    lines = ["| workload | policy | draws | " + " | ".join(COMPARED) + f" | {COMPARED[0]} ahead |",
             "|" + "---|" * (len(COMPARED) + 4)]
    for name, seeds in by_workload.items():
        runs = list(seeds.values())
        for policy in SEEDED_POLICIES:
            values = [every_draw(runs, estimator, policy, name) for estimator in COMPARED]
            own, *others = values
            ahead = sum(all(mine < theirs for theirs in draw) for mine, *draw in zip(own, *others))
            lines.append(f"| {name} | {policy} | {len(runs)} | " + " | ".join(map(spread, values))
                         + f" | {ahead} of {len(runs)} |")
    return "\n".join(lines)


def seeded_tables(results: dict) -> list[str]:
    """The spread over Philly's seeded draws and the Sia family draws, when the run made them."""
    others = results.get(SEEDS_KEY, {})
    tables = [over_seeds([results[PHILLY_NAME], *others.values()])] if others and PHILLY_NAME in results else []
    return tables + ([family_draws(results[FAMILY_KEY])] if results.get(FAMILY_KEY) else [])


def report(results: dict) -> str:
    """Every table the results hold."""
    main_tables = [table(results), summary(results)] if per_workload(results) else []
    return "\n\n".join(main_tables + seeded_tables(results))


def summary(results: dict) -> str:
    """One line per workload: this project's predictor against the per-op baseline and the ETS reference."""
    lines = ["| workload | oracle SRTF avg JCT s | " + " | ".join(f"{p.upper()} {e}" for p in ("srtf", "sjf")
                                                        for e in COMPARED) + " | AutoSched lightgbm / ets | FIFO |",
             "|" + "---|" * (2 * len(COMPARED) + 4)]
    for name, result in per_workload(results):
        rows = {(row["estimator"], row["policy"]): row for row in result["rows"]}
        cells = [f"{rows[(e, p)]['jct_vs_oracle']:.3f}" for p in ("srtf", "sjf") for e in COMPARED]
        auto = " / ".join(f"{rows[(e, 'autosched')]['jct_vs_oracle']:.3f}" if (e, "autosched") in rows else "-"
                          for e in ("lightgbm", "ets"))
        fifo = rows[("none", "fifo")]["avg_jct_s"] / rows[("oracle", "srtf")]["avg_jct_s"]
        lines.append(f"| {name} | {rows[('oracle', 'srtf')]['avg_jct_s']:,.0f} | " + " | ".join(cells)
                     + f" | {auto} | {fifo:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="collection directory or predictions CSV")
    parser.add_argument("--json", metavar="FILE", help="write every workload's result here")
    parser.add_argument("--plots", metavar="DIR", help="write one plot per workload here")
    parser.add_argument("--from-json", metavar="FILE", help="print the tables of an earlier --json run")
    parser.add_argument("--objective", choices=OBJECTIVES, help="AutoSched's objective (default: its default)")
    parser.add_argument("--seeds", type=int, default=1, metavar="K",
                        help="also run Philly at seeds 1..K-1 and print the spread over the K draws")
    parser.add_argument("--sia-family-seeds", type=int, default=0, metavar="K",
                        help="also run each Sia workload at seeds 0..K-1 with models drawn from each "
                             "application's family")
    parser.add_argument("--family-only", action="store_true",
                        help="run only the Sia family draws (no Philly, no main table)")
    args = parser.parse_args(argv)
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
        print(report(results))
        return 0
    common = ["--objective", args.objective] if args.objective else []
    if args.plots:
        Path(args.plots).mkdir(parents=True, exist_ok=True)
    results = {}
    for name, path, options in [] if args.family_only else workloads():
        plot = str(Path(args.plots) / (name.replace("/", "_").replace(" ", "_").replace(",", "") + ".png")) \
            if args.plots else None
        print(f"{name} ...", file=sys.stderr, flush=True)
        results[name] = run(args.dataset, path, [*options, *common], plot)
        if args.json:  # after every workload, so that a long run leaves what it finished
            Path(args.json).write_text(json.dumps(results, indent=1))
    for seed in range(1, 1 if args.family_only else args.seeds):
        print(f"{PHILLY_NAME}, seed {seed} ...", file=sys.stderr, flush=True)
        seeded = run(args.dataset, PHILLY_PATH, [*PHILLY, *common, "--seed", str(seed), "--autosched-estimators", ""],
                     None)
        results.setdefault(SEEDS_KEY, {})[str(seed)] = seeded
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    for name, path, options in sia_workloads():
        for seed in range(args.sia_family_seeds):
            print(f"{name}, family draw {seed} ...", file=sys.stderr, flush=True)
            drawn = run(args.dataset, path, [*options, *common, "--sia-models", "family", "--seed", str(seed),
                                             "--autosched-estimators", ""], None)
            results.setdefault(FAMILY_KEY, {}).setdefault(name, {})[str(seed)] = drawn
        if args.json and args.sia_family_seeds:
            Path(args.json).write_text(json.dumps(results, indent=1))
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
