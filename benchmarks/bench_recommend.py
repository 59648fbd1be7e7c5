"""Wall time of `itercast autosched recommend` on a 256-GPU cluster's Slurm log.

    PYTHONPATH=python python3 benchmarks/bench_recommend.py [--gpus 256] [--week 5] [--days 2.5] [--repeats 3] [--replay-days 7]

The log: the Philly virtual clusters of benchmarks/autosched_eval.py for that
cluster size, from the trace's start to ``--days`` into ``--week``, run on the
simulator first-come first-served with backfill (Slurm's default scheduling,
which never preempts: a job that started and has not ended is running) and
written as `sacct --parsable2`
would (partitions = virtual clusters, jobs still queued or running at the
log's end without an end). Each repeat runs the whole command in a fresh
process (interpreter start, imports, reading the log, the recommendation);
the peer in the same run is `itercast autosched` replaying the log's last
``--replay-days`` with a re-tune every hour, what an operator would run
without `recommend`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from autosched_eval import SHARED, VIRTUAL_CLUSTERS, WEEK
from itercast.sim import Cluster, SimConfig, load_workload, simulate

HEADER = "JobID|JobName|Partition|Account|User|State|Submit|Start|End|Elapsed|AllocTRES|ReqTRES"


def write_sacct_log(path: Path, gpus: int, week: int, days: float) -> dict:
    jobs = load_workload(SHARED / "workloads" / "philly_jobs.csv")
    jobs = jobs.subset(np.isin(jobs.virtual_cluster, VIRTUAL_CLUSTERS[gpus]) & (jobs.gpus <= gpus))
    log_end = float(jobs.submit.min()) + week * WEEK + days * 86400.0
    jobs = jobs.window(None, log_end)
    result = simulate(jobs, Cluster.homogeneous(gpus, 8), SimConfig(policy="fifo", backfill=True))
    lines = [HEADER]
    states = {"COMPLETED": 0, "RUNNING": 0, "PENDING": 0}
    for index in range(len(jobs)):
        start, end = result.first_start[index], result.finish[index]
        state = "PENDING" if start > log_end else "RUNNING" if end > log_end else "COMPLETED"
        states[state] += 1
        tres = f"billing={jobs.gpus[index]},cpu={4 * jobs.gpus[index]},gres/gpu={jobs.gpus[index]},node=1"
        lines.append("|".join([
            str(1000 + index), f"train{index}", jobs.virtual_cluster[index], "research", f"user{index % 97}", state,
            _clock(jobs.submit[index]), "Unknown" if state == "PENDING" else _clock(start),
            "Unknown" if state != "COMPLETED" else _clock(end),
            _elapsed(0 if state == "PENDING" else min(end, log_end) - start),
            "" if state == "PENDING" else tres, tres]))
    path.write_text("\n".join(lines) + "\n")
    return {"jobs": len(jobs), "log_end": _clock(log_end), **{state.lower(): n for state, n in states.items()}}


def _clock(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: float) -> str:
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def timed(argv: list[str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "itercast", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"itercast {' '.join(argv)} failed:\n{done.stderr}")
    return wall, done.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--week", type=int, default=5)
    parser.add_argument("--days", type=float, default=2.5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replay-days", type=float, default=7.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "sacct.txt"
        written = write_sacct_log(log, args.gpus, args.week, args.days)
        cluster = ["--workload", str(log), "--gpus", str(args.gpus), "--gpus-per-node", "8"]
        runs = [timed(["autosched", "recommend", *cluster, "--current", "policy=fifo", "--json"])
                for _ in range(args.repeats)]
        answer = json.loads(runs[-1][1])
        replay_from = datetime.strptime(written["log_end"], "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=timezone.utc).timestamp() - args.replay_days * 86400.0
        replay_wall, _ = timed(["autosched", *cluster, "--start", str(replay_from), "--json", "-q"])
    walls = [wall for wall, _ in runs]
    print(json.dumps({
        "log": written, "gpus": args.gpus, "recommend_wall_s": walls, "recommend_median_s": statistics.median(walls),
        "recommendation_s": answer["wall_s"], "running": answer["running"], "queued": answer["queued"],
        "switch": answer["switch"], "recommended": answer["recommended"]["config"]["policy"],
        "replay_days": args.replay_days, "replay_wall_s": replay_wall, "replay_over_recommend": replay_wall / statistics.median(walls),
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
