"""itercast autosched on the command line."""

import json

import numpy as np
import pytest

from itercast.cli import main
from itercast.sched import TunerSettings

SIM_KEYS = {"jobs", "avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "avg_queue_s", "p99_queue_s", "makespan_s",
            "utilization", "preemptions", "by_gpus", "policy", "gpus", "bad_rows"}
WALL_CLOCK_KEYS = ("wall_s", "jobs_per_s", "events_per_s", "tuning_wall_s", "max_retune_wall_s")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A day and a half of Tiresias-format jobs: many short 1-GPU jobs and
    some long 4-GPU ones, on 16 GPUs."""
    rng = np.random.default_rng(2)
    rows = []
    for index in range(300):
        long = index % 12 == 0
        rows.append((index, 4 if long else 1, int(rng.uniform(0, 1.5 * 86400)),
                     int(rng.uniform(8000, 20000) if long else rng.uniform(100, 600))))
    path = tmp_path_factory.mktemp("autosched") / "jobs.csv"
    path.write_text("job_id,num_gpu,submit_time,duration\n"
                    + "".join(f"{job},{gpus},{submit},{duration}\n" for job, gpus, submit, duration in rows)
                    + "bad,0,5,100\n")
    return path


def run_json(capsys, *args):
    assert main(["autosched", *args, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_json_has_the_sim_keys_and_the_tuning_record(trace, capsys):
    summary, err = run_json(capsys, "--workload", str(trace), "--gpus", "16", "--gpus-per-node", "4",
                            "--budget", "8", "--futures", "2", "--workers", "1")
    assert SIM_KEYS | {"retunes", "switches", "tuning_wall_s", "timeline"} <= set(summary)
    assert summary["jobs"] == 300 and summary["bad_rows"] == 1
    assert "skipped: GPU count must be positive" in err
    assert summary["retunes"] > 30 and summary["tuning_wall_s"] > 0
    timeline = summary["timeline"]
    assert timeline[0]["config"]["policy"] == "tiresias" and timeline[0]["config"]["queue_limits_gpu_s"] == [3600.0]
    assert len(timeline) == summary["switches"] + 1


def test_the_result_does_not_depend_on_the_worker_count(trace, capsys):
    # 12 simulations of one future: 9 candidates a re-tune, more than one batch of the search; on 8 GPUs
    # the jobs queue, so that the candidates found decide the switches.
    argv = ["--workload", str(trace), "--gpus", "8", "--gpus-per-node", "4", "--budget", "12", "--futures", "1",
            "--interval", "7200"]
    assert TunerSettings(budget=12, futures=1).candidates > TunerSettings.search_batch
    serial, _ = run_json(capsys, *argv, "--workers", "1")
    pooled, _ = run_json(capsys, *argv, "--workers", "2")
    assert serial["switches"] > 0
    for summary in (serial, pooled):
        for timing in WALL_CLOCK_KEYS:
            summary.pop(timing)
    assert json.dumps(pooled, sort_keys=True) == json.dumps(serial, sort_keys=True)


def test_plot_and_table(trace, tmp_path, capsys):
    plot = tmp_path / "switches.png"
    assert main(["autosched", "--workload", str(trace), "--gpus", "16", "--gpus-per-node", "4", "--budget", "8",
                 "--futures", "2", "--workers", "1", "--interval", "7200", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "re-tunes / switches" in out and "configurations:" in out and "tiresias" in out
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, message", [
    (["--budget", "7", "--futures", "2"], "at least 4 x futures"),
    (["--interval", "-5"], "interval_s must be a positive"),
    (["--margin", "1.5"], "margin must be in"),
    (["--review-budget", "3"], "review_budget must be 0"),
    (["--review", "0"], "review_s must be a positive"),
    (["--workers", "-1"], "argument --workers: must be 0 or more"),
    (["--search-batch", "0"], "search_batch must be at least 1"),
    (["--gpus", "10"], "multiple of --gpus-per-node"),
])
def test_bad_settings_exit_with_a_message(trace, capsys, args, message):
    base = {"--gpus": "16", "--gpus-per-node": "4"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = ["autosched", "--workload", str(trace)] + [part for pair in base.items() for part in pair]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_job_larger_than_the_cluster_is_named(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text("job_id,num_gpu,submit_time,duration\nsmall,1,0,100\nhuge,64,10,100\n")
    assert main(["autosched", "--workload", str(path), "--gpus", "16", "--gpus-per-node", "4"]) == 2
    assert "job huge" in capsys.readouterr().err


def test_progress_bar_appears_once_a_run_is_slow(monkeypatch):
    import io

    from itercast.cli import autosched

    stream = io.StringIO()
    progress = autosched.Progress(stream)
    progress(0.0, 100.0)
    assert stream.getvalue() == ""
    monkeypatch.setattr(autosched, "PROGRESS_AFTER_S", 0.0)
    progress(50.0, 100.0)
    assert "replaying [" in stream.getvalue() and "50.0%" in stream.getvalue()
