import json
from pathlib import Path

import pytest

from itercast.cli import main
from shared_data import vendored

REQUIRED_KEYS = {"jobs", "avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_queue_s", "p99_queue_s", "makespan_s",
                 "utilization", "preemptions", "wall_s", "jobs_per_s"}


@pytest.fixture
def tiresias_csv():
    return str(vendored("workloads/tiresias_60_job.csv"))


def sim(*args):
    return main(["sim", *args])


def test_json_output_has_the_documented_keys(tiresias_csv, capsys):
    # 60 jobs on 64 GPUs: at most 8 GPUs each, far less than the cluster in
    # total at any time, so FIFO never queues and every JCT is the duration.
    assert sim("--workload", tiresias_csv, "--gpus", "64", "--gpus-per-node", "8",
               "--policy", "fifo", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert REQUIRED_KEYS <= summary.keys()
    assert summary["jobs"] == 60 and summary["avg_queue_s"] == 0 and summary["preemptions"] == 0


def test_set_changes_the_configuration(tiresias_csv, capsys):
    # 8 GPUs make the 60 jobs queue; LAS with a 60 s lease preempts, a lease
    # longer than any job never does.
    args = ["--workload", tiresias_csv, "--format", "tiresias", "--gpus", "8", "--gpus-per-node", "8",
            "--policy", "las", "--json"]
    assert sim(*args, "--set", "lease_s=60", "--set", "restart_overhead_s=5") == 0
    short_lease = json.loads(capsys.readouterr().out)
    assert sim(*args, "--set", "lease_s=100000") == 0
    long_lease = json.loads(capsys.readouterr().out)
    assert short_lease["preemptions"] > long_lease["preemptions"] == 0


def test_text_output(tiresias_csv, capsys):
    assert sim("--workload", tiresias_csv, "--gpus", "16", "--gpus-per-node", "8", "--policy", "tiresias") == 0
    out = capsys.readouterr().out
    assert "avg / p50 / p95 / p99 JCT (s)" in out and "GPU utilization" in out


def test_a_job_that_never_fits_names_the_job(tiresias_csv, capsys):
    # Job 1 of the Tiresias file (line 3) asks for 8 GPUs.
    assert sim("--workload", tiresias_csv, "--gpus", "4", "--gpus-per-node", "4", "--policy", "fifo") == 2
    assert "job 1 (" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--set", "bogus=1"], "--set expects key=value"),
    (["--set", "lease_s=soon"], "lease_s: cannot read 'soon' as float"),
    (["--set", "queues=5"], "5 queues need 4 queue_limits_gpu_s"),
    (["--start", "tomorrow"], "--start: cannot read time 'tomorrow'"),
])
def test_bad_options_are_user_errors(tiresias_csv, capsys, args, message):
    assert sim("--workload", tiresias_csv, "--gpus", "16", "--gpus-per-node", "8", "--policy", "fifo", *args) == 2
    assert message in capsys.readouterr().err


def test_bad_rows_are_reported_on_stderr(capsys):
    helios = str(Path(__file__).parent / "data" / "helios_cluster_log.csv")
    assert sim("--workload", helios, "--gpus", "16", "--gpus-per-node", "8", "--policy", "qssf", "--json") == 0
    captured = capsys.readouterr()
    assert "helios_cluster_log.csv:4: skipped: GPU count must be positive" in captured.err
    assert json.loads(captured.out)["bad_rows"] == 3


def test_estimator_names_the_estimates_column_sjf_ranks_by(tmp_path, capsys):
    # One GPU; B's estimate under "right" is short, under "wrong" long: SJF runs the one it thinks shortest first.
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,num_gpu,submit_time,duration,estimated_duration:right,estimated_duration:wrong\n"
                    "A,1,0,100,100,100\nB,1,1,100,100,100\nC,1,2,10,10,1000\n")
    args = ["--workload", str(path), "--gpus", "1", "--gpus-per-node", "1", "--policy", "sjf",
            "--set", "estimate=supplied", "--json"]
    assert sim(*args) == 2
    assert "estimated_duration:<name> columns read with --estimator NAME" in capsys.readouterr().err
    assert sim(*args, "--estimator", "right") == 0
    right = json.loads(capsys.readouterr().out)
    assert sim(*args, "--estimator", "wrong") == 0
    wrong = json.loads(capsys.readouterr().out)
    assert right["avg_jct_s"] < wrong["avg_jct_s"]
