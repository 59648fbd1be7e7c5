"""Overhead of the online Monitor: the same CPU training loop with and without it.

Runs alternate (without, with, with, without, ...) so that load from other
jobs on the machine, and any drift of its speed, falls on both sides. Reported: the median run's extra
wall time from the Monitor's start to the last step, profiled steps included;
the training thread's extra CPU time (which other jobs' load inflates less);
the CPU time of the Monitor's prediction process, which runs beside the
training thread; and the wait in ``close()`` after the last step.

    PYTHONPATH=python python3 benchmarks/bench_online.py [--steps 2000] [--pairs 3]
    PYTHONPATH=python python3 -m pytest benchmarks/bench_online.py --benchmark-enable -s

With benchmarks disabled (the repo's default) pytest makes one short smoke run.
The model is trained on the spot from tiny profiled jobs (tests/online/online_fixtures.py)
with the default 300 boosting rounds, so each prediction costs what a real model's does.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # tiny_collection, which online_fixtures imports
sys.path.insert(0, str(REPO / "tests" / "online"))
from online_fixtures import TrainingJob, train_model  # noqa: E402

from itercast.online import Monitor  # noqa: E402
from itercast.online.monitor import DEFAULT_BACKOFF  # noqa: E402

# (width, depth, batch) of the MLPs timed: a ~2 ms and a ~10 ms step on one thread here.
JOBS = {"mlp512x3-b64": (512, 3, 64), "mlp1024x3-b64": (1024, 3, 64)}
STEPS, PAIRS = 2000, 3


def run_loop(job: TrainingJob, steps: int, monitor: Monitor | None) -> tuple[float, float, float, float]:
    """(wall s, training-thread CPU s, prediction-process CPU s, close s) of ``steps`` iterations.

    Wall and CPU run from the Monitor's start to the last step; ``close`` is the wait after
    training for the last cycle's prediction and the prediction process's exit.
    """
    wall, cpu = time.perf_counter(), time.thread_time()
    children = _children_cpu_s()
    if monitor is not None:
        monitor.start()
    for _ in range(steps):
        job.step()
        if monitor is not None:
            monitor.step()
    trained, trained_cpu = time.perf_counter(), time.thread_time()
    if monitor is not None:
        monitor.close()
    return trained - wall, trained_cpu - cpu, _children_cpu_s() - children, time.perf_counter() - trained


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(model: Path, spec: tuple[int, int, int], steps: int, pairs: int, every: int,
            backoff: float | None) -> dict:
    job = TrainingJob(*spec)
    job.median_step_ms(10)  # warm up
    plain, monitored, predictions = [], [], 0
    for pair in range(pairs):
        # Alternating which run goes first (ABBA) cancels a drift of the machine's speed over the
        # session, which always-second monitored runs would take as overhead.
        for monitored_run in ((False, True) if pair % 2 == 0 else (True, False)):
            if not monitored_run:
                plain.append(run_loop(job, steps, None))
                continue
            monitor = Monitor(model, total_steps=steps, every=every, backoff=backoff)
            monitored.append(run_loop(job, steps, monitor))
            predictions += len(monitor.history)
    result = {"step_ms": statistics.median(run[0] for run in plain) / steps * 1e3, "predictions": predictions,
              "worker_cpu_s": statistics.median(run[2] for run in monitored),
              "close_s": statistics.median(run[3] for run in monitored)}
    for index, label in ((0, "wall"), (1, "cpu")):
        base = statistics.median(run[index] for run in plain)
        with_monitor = statistics.median(run[index] for run in monitored)
        result[f"{label}_s"] = (base, with_monitor)
        result[f"{label}_overhead_pct"] = 100 * (with_monitor - base) / base
        result[f"{label}_pairs_pct"] = [100 * (m[index] - p[index]) / p[index] for p, m in zip(plain, monitored)]
    return result


def mean_and_interval(values: list[float]) -> str:
    """Mean ± half-width of a normal 95% interval (Student's t for few pairs)."""
    if len(values) < 2:
        return f"{values[0]:+.2f}%"
    from scipy.stats import t

    half = t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{statistics.mean(values):+.2f} ± {half:.2f}%"


def report(results: dict[str, dict], steps: int, pairs: int) -> str:
    lines = ["| job | step ms | steps | runs | predictions | wall s without / with | wall overhead | "
             "wall per pair: mean ± 95% CI | wall per pair | training-thread CPU s without / with | CPU overhead | "
             "CPU per pair | prediction process CPU s | close s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        wall_pairs = ", ".join(f"{p:+.1f}" for p in r["wall_pairs_pct"])
        cpu_pairs = ", ".join(f"{p:+.1f}" for p in r["cpu_pairs_pct"])
        lines.append(f"| {name} | {r['step_ms']:.2f} | {steps} | {pairs} + {pairs} | {r['predictions']} | "
                     f"{r['wall_s'][0]:.2f} / {r['wall_s'][1]:.2f} | {r['wall_overhead_pct']:+.2f}% | "
                     f"{mean_and_interval(r['wall_pairs_pct'])} | {wall_pairs} | "
                     f"{r['cpu_s'][0]:.2f} / {r['cpu_s'][1]:.2f} | {r['cpu_overhead_pct']:+.2f}% | {cpu_pairs} | "
                     f"{r['worker_cpu_s']:.2f} | {r['close_s']:.2f} |")
    return "\n".join(lines)


def benchmark(steps: int, pairs: int, every: int, jobs=JOBS, backoff: float | None = DEFAULT_BACKOFF) -> str:
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as scratch:
        model = train_model(Path(scratch), rounds=300)
        results = {name: measure(model, spec, steps, pairs, every, backoff) for name, spec in jobs.items()}
    return report(results, steps, pairs)


def test_monitor_overhead(request):
    enabled = request.config.getoption("benchmark_enable", False)
    if enabled:
        print("\n" + benchmark(steps=STEPS, pairs=PAIRS, every=200))
    else:  # smoke: one short pair of the smaller job
        table = benchmark(steps=40, pairs=1, every=20, jobs={"mlp512x3-b64": JOBS["mlp512x3-b64"]})
        assert "mlp512x3-b64" in table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--every", type=int, default=200, help="the Monitor's shortest gap between cycles")
    parser.add_argument("--backoff", type=float, default=DEFAULT_BACKOFF,
                        help="the Monitor's back-off while predictions hold; 1 keeps cycles every --every steps")
    parser.add_argument("--job", action="append", choices=sorted(JOBS), help="time only these (repeat)")
    args = parser.parse_args()
    jobs = {name: JOBS[name] for name in args.job} if args.job else JOBS
    print(benchmark(args.steps, args.pairs, args.every, jobs, args.backoff))


if __name__ == "__main__":
    main()
