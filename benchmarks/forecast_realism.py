"""How realistic are the futures that itercast.sched.forecast samples?

    PYTHONPATH=python python3 benchmarks/forecast_realism.py [--json] [--vc NAME]
        [--every-h 6] [--horizons-h 1,6] [--warmup-days 8] [--samples 8] [--seed 0]

1. Philly (all jobs, or one virtual cluster): at forecast instants every
   ``--every-h`` hours from ``--warmup-days`` after the trace starts, each
   forecaster is fitted on what is known then and its future for the next
   horizon is compared with the jobs actually submitted in it: KS distance
   (scipy.stats.ks_2samp statistic) of durations and of GPU counts, and the
   error of the arrival count. WorkloadForecaster's count is its expected
   arrivals and its KS pools ``--samples`` futures; the baselines' count is
   the number of jobs they replay. The trace starts at the 0.1% quantile of
   submit times (its first three weeks hold only a few stray jobs). Finish
   times are submit + duration: on a Philly-sized cluster (2,048 GPUs) the
   trace never queues (benchmarks/bench_sim.py).
2. Helios Venus 10-minute submission counts: the arrival model, refitted on
   the trailing history, predicts every 10-minute count of September 2020,
   from data up to the bin's start ("next 10 min"), up to the top of the hour
   ("next hour"), or up to 40 minutes before the bin (the newest count that
   Lucid's throughput features use, shift by 5 bins); hourly totals from
   the top of the hour. Beside it: persistence (the newest known count), the
   MAE of the September predictions Lucid released (simulation/predictor/
   Venus_throughput_pred.csv in github.com/S-Lab-System-Group/Lucid; the MAE
   computed by us from that file, kept below as a constant), and a LightGBM
   on Lucid-style features trained on April-August (our reproduction;
   skipped without lightgbm).
3. DurationEstimator's statistic: average JCT of SJF, QSSF and SRTF on
   Philly replayed on 256 GPUs, estimates refitted every 6 h on the last
   24 h of finished jobs, for each statistic, against oracle estimates; FIFO
   for scale. Skipped with --vc.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp

from itercast.sched.estimator import STATISTICS, DurationEstimator
from itercast.sched.forecast import (DAY_S, HOUR_S, ArrivalModel, HistoryReplay, SameHourLastWeek,
                                     WorkloadForecaster)
from itercast.sim import Cluster, SimConfig, Workload, load_workload, simulate

SHARED = Path(os.environ.get("ITERCAST_SHARED", Path(__file__).resolve().parents[2] / "shared"))
BIN_S = 600.0
FORECASTERS = {"forecaster": WorkloadForecaster, "history_replay": HistoryReplay,
               "same_hour_last_week": SameHourLastWeek}

# MAE over 2020-09-01..28 of the predictions in Lucid's released Venus_throughput_pred.csv
# (their interpretable model), columns submit_gpu_job / pred_gpu_job and submit_gpu_num / pred_gpu_num.
LUCID_RELEASED_MAE = {"submit_gpu_job": 4.12, "submit_gpu_num": 52.93}


def forecast_instants(workload: Workload, every_s: float, warmup_s: float, horizon_s: float) -> np.ndarray:
    start = np.quantile(workload.submit, 0.001) + warmup_s
    return np.arange(start, workload.submit.max() - horizon_s, every_s)


def philly_realism(workload: Workload, horizons_s: list, every_s: float, warmup_s: float,
                   samples: int, seed: int) -> dict:
    finish = workload.submit + workload.duration
    rng = np.random.default_rng(seed)
    rows = {(name, h): [] for name in FORECASTERS for h in horizons_s}
    instants = forecast_instants(workload, every_s, warmup_s, max(horizons_s))
    for now in instants:
        fitted = {name: make().fit(workload, finish, now) for name, make in FORECASTERS.items()}
        if not all(model.has_history for model in fitted.values()):
            continue
        for horizon in horizons_s:
            actual = workload.window(now, now + horizon)
            for name, model in fitted.items():
                rows[name, horizon].append(_compare(model, actual, now, horizon, samples, rng))
    return {f"{name}@{h / HOUR_S:g}h": _summarise(values) for (name, h), values in rows.items()}


def _compare(model, actual: Workload, now: float, horizon: float, samples: int, rng) -> dict:
    if isinstance(model, WorkloadForecaster):
        futures = [model.sample(horizon, rng) for _ in range(samples)]
        count = model.expected_arrivals(now, now + horizon)
    else:
        futures = [model.sample(horizon, rng)]
        count = len(futures[0])
    duration = np.concatenate([future.duration for future in futures])
    gpus = np.concatenate([future.gpus for future in futures])
    both = len(actual) > 0 and len(duration) > 0
    return {
        "count_error": abs(count - len(actual)),
        "relative_count_error": abs(count - len(actual)) / max(len(actual), 1),
        "ks_duration": ks_2samp(duration, actual.duration, method="asymp").statistic if both else np.nan,
        "ks_gpus": ks_2samp(gpus, actual.gpus, method="asymp").statistic if both else np.nan,
    }


def _summarise(values: list) -> dict:
    table = pd.DataFrame(values)
    return {
        "instants": len(table),
        "ks_instants": int(table["ks_duration"].notna().sum()),
        "ks_duration": float(table["ks_duration"].mean()),
        "ks_gpus": float(table["ks_gpus"].mean()),
        "count_mae": float(table["count_error"].mean()),
        "count_mean_relative_error": float(table["relative_count_error"].mean()),
    }


def read_throughput(path: Path) -> pd.DataFrame:
    table = pd.read_csv(path, parse_dates=["time"])
    table["start"] = (table["time"] - pd.Timestamp("1970-01-01")).dt.total_seconds()
    return table


def helios_arrivals(table: pd.DataFrame, column: str, test_from: str, history_s: float) -> dict:
    """MAE of the arrival model's 10-minute counts over the test period, for three information lags."""
    starts = table["start"].to_numpy()
    counts = table[column].to_numpy()
    test = starts >= pd.Timestamp(test_from).timestamp()
    model = ArrivalModel(history_s)
    lags = {"next_10min": lambda t: t, "next_hour": lambda t: np.floor(t / HOUR_S) * HOUR_S,
            "lag_40min": lambda t: t - 2400.0}
    result = {}
    for name, known_until in lags.items():
        predicted = np.array([_predict(model, starts, counts, known_until(t), t, t + BIN_S) for t in starts[test]])
        result[name] = float(np.mean(np.abs(predicted - counts[test])))
    # Persistence: the newest count known predicts the next bin.
    for name, bins_back in (("persistence_next_10min", 1), ("persistence_lag_40min", 5)):
        result[name] = float(np.mean(np.abs(np.roll(counts, bins_back)[test] - counts[test])))
    hours = starts[test][::6]
    hourly = np.add.reduceat(counts[test], np.arange(0, test.sum(), 6))
    predicted = np.array([_predict(model, starts, counts, t, t, t + HOUR_S) for t in hours])
    result["hourly_totals"] = float(np.mean(np.abs(predicted - hourly)))
    previous_hour = np.add.reduceat(counts[np.flatnonzero(test)[0] - 6:][:test.sum()], np.arange(0, test.sum(), 6))
    result["persistence_hourly_totals"] = float(np.mean(np.abs(previous_hour - hourly)))
    return result


def _predict(model: ArrivalModel, bin_starts: np.ndarray, counts: np.ndarray, now: float,
             start: float, end: float) -> float:
    """Expected arrivals in [start, end) from the bins that ended by ``now``,
    each count standing at its bin's middle."""
    lo, hi = np.searchsorted(bin_starts, [now - model.calendar_history_s - BIN_S, now - BIN_S], side="right")
    return model.fit(bin_starts[lo:hi] + BIN_S / 2, now, counts[lo:hi]).expected(start, end)


def lucid_style_lightgbm(table: pd.DataFrame, column: str, test_from: str) -> float | None:
    """MAE of a default LightGBM on Lucid-style features (calendar fields,
    lags of 1 h, 3 h and 1 day, their soft averages, and 1-hour rolling
    statistics from an hour back), trained on everything before test_from."""
    try:
        import lightgbm
    except ImportError:
        return None
    features = _lucid_features(table, ("submit_gpu_job", "submit_gpu_num"))
    train = table["time"] < pd.Timestamp(test_from)
    model = lightgbm.LGBMRegressor(verbose=-1, n_jobs=1)
    model.fit(features[train], table.loc[train, column])
    return float(np.mean(np.abs(model.predict(features[~train]) - table.loc[~train, column])))


def _lucid_features(table: pd.DataFrame, columns: tuple) -> pd.DataFrame:
    time_ = table["time"].dt
    features = pd.DataFrame({"month": time_.month, "day": time_.day, "hour": time_.hour,
                             "minute": time_.minute, "dayofweek": time_.day_of_week,
                             "dayofyear": time_.day_of_year, "week": time_.isocalendar().week.astype(int)})
    for column in columns:
        series = table[column]
        for name, lag in (("1h", 6), ("3h", 18), ("1d", 144)):
            features[f"{column}_lag_{name}"] = series.shift(lag)
            features[f"{column}_soft_{name}"] = (0.5 * series.shift(lag)
                                                 + 0.25 * (series.shift(lag + 1) + series.shift(lag - 1)))
        hour_back = series.shift(6).rolling(6)
        features[f"{column}_mean_1h"] = hour_back.mean()
        features[f"{column}_median_1h"] = hour_back.median()
        features[f"{column}_std_1h"] = hour_back.std()
    return features.fillna(0)


def estimator_statistics(workload: Workload, gpus: int = 256, refit_s: float = 6 * HOUR_S) -> dict:
    """Average JCT (s) per duration-aware policy: oracle estimates, then each statistic's."""
    finish = workload.submit + workload.duration
    cluster = Cluster.homogeneous(gpus, 8)
    with_estimates = {statistic: dataclasses.replace(workload, estimates=_rolling_estimates(
        workload, finish, DurationEstimator(statistic=statistic), refit_s)) for statistic in STATISTICS}
    result = {"fifo": {"oracle": _avg_jct(workload, cluster, SimConfig(policy="fifo"))}}
    for policy in ("sjf", "qssf", "srtf"):
        result[policy] = {"oracle": _avg_jct(workload, cluster, SimConfig(policy=policy))}
        for statistic, supplied in with_estimates.items():
            result[policy][statistic] = _avg_jct(supplied, cluster, SimConfig(policy=policy, estimate="supplied"))
    return result


def _rolling_estimates(workload: Workload, finish: np.ndarray, estimator: DurationEstimator,
                       refit_s: float) -> np.ndarray:
    """Each job's estimate from the estimator fitted at the last refit instant before its submission."""
    estimates = np.empty(len(workload))
    period = np.floor(workload.submit / refit_s)
    for fitted_at in np.unique(period):
        jobs = np.flatnonzero(period == fitted_at)
        estimator.fit(workload, finish, fitted_at * refit_s)
        vcs = None if workload.virtual_cluster is None else workload.virtual_cluster[jobs]
        estimates[jobs] = estimator.predict(workload.gpus[jobs], vcs)
    return estimates


def _avg_jct(workload: Workload, cluster: Cluster, config: SimConfig) -> float:
    return float(simulate(workload, cluster, config).summary()["avg_jct_s"])


def fit_and_sample_ms(workload: Workload, repeats: int = 20) -> dict:
    """Costs at the end of the busiest 24 h of the trace (whole hours), the
    whole trace given to fit (it keeps what is known then)."""
    finish = workload.submit + workload.duration
    hours = np.bincount(((workload.submit - workload.submit.min()) // HOUR_S).astype(np.int64))
    busiest_end = int(np.argmax(np.convolve(hours, np.ones(24), mode="valid"))) + 24
    now = workload.submit.min() + busiest_end * HOUR_S
    forecaster = WorkloadForecaster()
    began = time.perf_counter()
    for _ in range(repeats):
        forecaster.fit(workload, finish, now)
    report = {"window_jobs": int(np.count_nonzero((workload.submit >= now - DAY_S) & (workload.submit < now))),
              "fit_ms": (time.perf_counter() - began) / repeats * 1e3}
    rng = np.random.default_rng(0)
    for hours_ahead in (1, 6):
        began = time.perf_counter()
        jobs = sum(len(forecaster.sample(hours_ahead * HOUR_S, rng)) for _ in range(repeats))
        report[f"sample_{hours_ahead}h_ms"] = (time.perf_counter() - began) / repeats * 1e3
        report[f"sampled_jobs_{hours_ahead}h"] = jobs / repeats
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--vc", help="one Philly virtual cluster")
    parser.add_argument("--every-h", type=float, default=6.0)
    parser.add_argument("--horizons-h", default="1,6")
    parser.add_argument("--warmup-days", type=float, default=8.0)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    philly = load_workload(SHARED / "workloads" / "philly_jobs.csv", virtual_cluster=args.vc)
    horizons = [float(h) * HOUR_S for h in args.horizons_h.split(",")]
    began = time.process_time()
    report = {
        "philly": philly_realism(philly, horizons, args.every_h * HOUR_S, args.warmup_days * DAY_S,
                                 args.samples, args.seed),
        "cost": fit_and_sample_ms(philly),
        "helios_venus": helios_report(SHARED / "workloads" / "helios_venus_throughput_10min.csv"),
        "estimator_avg_jct_s": estimator_statistics(philly) if args.vc is None else None,
    }
    report["cpu_s"] = time.process_time() - began
    print(json.dumps(report, indent=1) if args.json else render(report))
    return 0


def helios_report(path: Path) -> dict:
    table = read_throughput(path)
    report = {}
    for column in ("submit_job_all", "submit_gpu_job"):
        report[column] = helios_arrivals(table, column, "2020-09-01", DAY_S)
    report["submit_gpu_job"]["lucid_released_predictions"] = LUCID_RELEASED_MAE["submit_gpu_job"]
    report["submit_gpu_job"]["lightgbm_lucid_features"] = lucid_style_lightgbm(table, "submit_gpu_job", "2020-09-01")
    return report


def render(report: dict) -> str:
    lines = ["Philly: forecast vs actual next window (mean over instants)",
             f"{'forecaster@horizon':<26}{'instants':>9}{'KS dur':>8}{'KS gpus':>9}{'count MAE':>11}{'rel err':>9}"]
    for name, row in report["philly"].items():
        lines.append(f"{name:<26}{row['instants']:>9}{row['ks_duration']:>8.3f}{row['ks_gpus']:>9.3f}"
                     f"{row['count_mae']:>11.1f}{row['count_mean_relative_error']:>9.2f}")
    cost = report["cost"]
    lines += ["", f"fit {cost['fit_ms']:.1f} ms ({cost['window_jobs']} jobs in the 24 h window), "
                  f"sample 1 h {cost['sample_1h_ms']:.2f} ms ({cost['sampled_jobs_1h']:.0f} jobs), "
                  f"6 h {cost['sample_6h_ms']:.2f} ms ({cost['sampled_jobs_6h']:.0f} jobs)", "",
              "Helios Venus, September 2020: MAE of 10-minute submission counts"]
    for column, row in report["helios_venus"].items():
        lines.append(f"  {column}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items() if v is not None))
    if report["estimator_avg_jct_s"]:
        lines += ["", "Philly on 256 GPUs, average JCT (s) by duration estimate",
                  f"{'policy':<8}" + "".join(f"{name:>10}" for name in ("oracle", *STATISTICS))]
        for policy, row in report["estimator_avg_jct_s"].items():
            lines.append(f"{policy:<8}" + "".join(f"{row[name]:>10.0f}" if name in row else f"{'':>10}"
                                                  for name in ("oracle", *STATISTICS)))
    lines += ["", f"CPU {report['cpu_s']:.1f} s"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
