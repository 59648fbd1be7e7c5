"""Schedulers' own logs (Slurm sacct, PAI 2020, openb pod list, kubectl JSON):
every job read back exactly as tests/logwriters.py wrote it, bad rows at
their lines, detection, filters, fractional GPUs rounded up, and each log
replayed end to end by ``itercast sim`` and ``itercast autosched``."""

import json
import math
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from itercast.cli import main
from itercast.sim import FORMATS, WorkloadError, load_job_log, load_workload, log_summary
from itercast.sim.logs import detect_log_format
from itercast.sim.logs.slurm import array_tasks, tres_gpus
from logwriters import (FINISHED, NEVER_STARTED, PENDING, RUNNING, write_kubectl_pods, write_openb_pods,
                        write_pai_tables, write_slurm_log)

HELIOS_CSV = Path(__file__).parent / "data" / "helios_cluster_log.csv"
JOBS = {"slurm": 240, "pai": 220, "k8s-pods": 230, "kubectl": 210}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    return {
        "slurm": write_slurm_log(root / "sacct.txt", jobs=JOBS["slurm"], seed=0),
        "pai": write_pai_tables(root / "pai", jobs=JOBS["pai"], seed=0),
        "k8s-pods": write_openb_pods(root / "openb_pod_list_default.csv", jobs=JOBS["k8s-pods"], seed=0),
        "kubectl": write_kubectl_pods(root / "pods.json", jobs=JOBS["kubectl"], seed=0),
    }


def same(a, b) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def as_written(log) -> dict:
    return {job: (submit, start, end, request, vc, state, line) for job, submit, start, end, request, vc, state, line
            in zip(log.job_ids, log.submit, log.start, log.end, log.gpu_request, log.virtual_cluster, log.state,
                    log.lines)}


def assert_every_job_as_written(log, truth):
    got = as_written(log)
    assert list(got) == list(truth["expected"])
    for job_id, want in truth["expected"].items():
        submit, start, end, request, vc, state, line = got[job_id]
        assert (same(submit, want.submit), same(start, want.start), same(end, want.end)) == (True,) * 3, job_id
        assert (request, vc, state, line) == (want.gpu_request, want.virtual_cluster, want.state, want.line), job_id


@pytest.mark.parametrize("fmt", ["slurm", "pai", "k8s-pods", "kubectl"])
def test_every_job_read_back_as_written(logs, fmt):
    truth = logs[fmt]
    log = load_job_log(truth["path"])  # format told from the content
    assert log.format == fmt
    assert_every_job_as_written(log, truth)
    assert log.counts() == truth["counts"]
    assert log.log_end == truth["log_end"]
    assert len(log) + log.counts()["no GPU"] + log.counts().get("no task", 0) == truth["jobs"] == JOBS[fmt]
    assert [(bad.line, truth["bad_lines"][bad.line] in bad.reason) for bad in log.bad_rows] == \
        [(line, True) for line in sorted(truth["bad_lines"])]


@pytest.mark.parametrize("fmt", ["slurm", "pai", "k8s-pods", "kubectl"])
def test_censored_jobs_are_running_and_pending_ones_queued_at_the_logs_end(logs, fmt):
    truth = logs[fmt]
    log = load_job_log(truth["path"], fmt)
    state = log.at(log.log_end)
    assert int(state.running.sum()) == truth["counts"][RUNNING]
    assert int(state.queued.sum()) == truth["counts"][PENDING]
    censored = [job for job, want in truth["expected"].items() if want.status == RUNNING]
    assert sorted(log.job_ids[log.censored]) == sorted(censored)


@pytest.mark.parametrize("fmt", ["slurm", "pai", "k8s-pods", "kubectl"])
def test_workload_replays_started_jobs_for_as_long_as_they_ran(logs, fmt):
    truth = logs[fmt]
    workload = load_workload(truth["path"])
    replayed = {job: want for job, want in truth["expected"].items()
                if want.status in (FINISHED, RUNNING) and not want.ran_zero}
    assert list(workload.job_ids) == list(replayed)
    for index, want in enumerate(replayed.values()):
        until = truth["log_end"] if want.status == RUNNING else want.end
        assert workload.duration[index] == until - want.start
        assert workload.gpus[index] == math.ceil(want.gpu_request)
    assert int(workload.gpus.sum()) == truth["replayed_gpus"]
    assert [bad.line for bad in workload.bad_rows] == sorted(truth["bad_lines"])


@pytest.mark.parametrize("fmt", ["slurm", "pai", "k8s-pods", "kubectl"])
@pytest.mark.parametrize("command", ["sim", "autosched"])
def test_log_replayed_end_to_end_by_the_cli(logs, fmt, command, capsys):
    truth = logs[fmt]
    options = ["--policy", "fifo"] if command == "sim" else ["--budget", "12", "--futures", "1"]
    code = main([command, "--workload", str(truth["path"]), "--gpus", "64", "--gpus-per-node", "8", *options,
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out.strip().splitlines()[-1])["jobs"] == truth["counts"]["replayed"]
    first_bad = min(truth["bad_lines"])
    assert f"{truth['path']}:{first_bad}: skipped: " in err


def test_format_option_offers_every_log_format(logs, capsys):
    assert sorted(FORMATS) == ["helios", "k8s-pods", "kubectl", "pai", "philly", "slurm", "tiresias"]
    truth = logs["kubectl"]
    assert main(["sim", "--workload", str(truth["path"]), "--format", "kubectl", "--gpus", "64",
                 "--gpus-per-node", "8", "--policy", "fifo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == truth["counts"]["replayed"]


# ---------------------------------------------------------------- Slurm


def test_slurm_folds_steps_and_expands_arrays(logs):
    truth = logs["slurm"]
    log = load_job_log(truth["path"])
    ids = list(log.job_ids)
    assert not any("." in job for job in ids)
    text = Path(truth["path"]).read_text()
    pending_array = re.search(r"^(\d+)_\[5-9\]\|", text, re.M).group(1)
    throttled = re.search(r"^(\d+)_\[1,3,5-7%2\]\|", text, re.M).group(1)
    assert [job for job in ids if job.startswith(pending_array + "_")] == [f"{pending_array}_{t}" for t in range(5, 10)]
    assert [job for job in ids if job.startswith(throttled + "_")] == [f"{throttled}_{t}" for t in (1, 3, 5, 6, 7)]
    status = dict(zip(log.job_ids, log.status()))
    assert {status[f"{pending_array}_{t}"] for t in range(5, 10)} == {PENDING}
    het = re.search(r"^(\d+)\+0\|", text, re.M).group(1)
    assert f"{het}+0" in ids and f"{het}+1" in ids and het not in ids
    assert truth["first_job_id"] in ids and truth["first_job_id"] + ".batch" in text


def test_slurm_reads_gpus_from_allocation_else_request(logs):
    truth = logs["slurm"]
    log = load_job_log(truth["path"])
    request = dict(zip(log.job_ids, log.gpu_request))
    lines = {line.split("|")[0]: line.split("|") for line in Path(truth["path"]).read_text().splitlines()
             if line.count("|") == 11}
    typed = next(job for job, fields in lines.items() if "gres/gpu:a100=4" in fields[10])
    typed_only = next(job for job, fields in lines.items() if "gres/gpu:v100=2" in fields[10])
    pending = next(job for job, fields in lines.items() if fields[5] == "PENDING" and "[" not in job)
    assert (request[typed], request[typed_only]) == (4.0, 2.0)
    assert request[pending] == tres_gpus(lines[pending][11]) > 0 and lines[pending][10] == ""
    assert tres_gpus("billing=8,cpu=8,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1") == 4
    assert tres_gpus("cpu=8,gres/gpu:a100=2,gres/gpu:v100=2,gres/gpumem=32G") == 4
    assert tres_gpus("cpu=8,gres/gpu=8,gres/gpu:a100=4,gres/gpu:v100=4") == 8
    assert tres_gpus("billing=2,cpu=2,mem=4G,node=1") == 0
    assert array_tasks("5-9") == [5, 6, 7, 8, 9]
    assert array_tasks("1,3,5-7%2") == [1, 3, 5, 6, 7]
    assert array_tasks("1-7:2%4") == [1, 3, 5, 7]


def test_slurm_never_started_running_and_cpu_only_jobs(logs):
    truth = logs["slurm"]
    log = load_job_log(truth["path"])
    status = dict(zip(log.job_ids, log.status()))
    fields = [line.split("|") for line in Path(truth["path"]).read_text().splitlines()[1:] if line.count("|") == 11]
    cancelled_queued = [f[0] for f in fields if f[5] == "CANCELLED by 1234" and f[10] == ""]
    running = [f[0] for f in fields if f[5] == "RUNNING" and "." not in f[0]]
    cpu_only = [f[0] for f in fields if "gres/gpu" not in f[10] + f[11]]
    assert cancelled_queued and {status[job] for job in cancelled_queued} == {NEVER_STARTED}
    assert running and {status[job] for job in running} == {RUNNING}
    assert cpu_only and not set(cpu_only) & set(log.job_ids)
    assert log.counts()["no GPU"] == len(cpu_only) == truth["counts"]["no GPU"]


def test_slurm_small_log_zone_less_utc_duplicates_orphan_steps_and_parsable(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")  # a zone-less time read as local would be 5 h off
    time.tzset()
    rows = [
        "JobID|Partition|State|Submit|Start|End|AllocTRES|ReqTRES|",
        "7|gpu,debug|REQUEUED|2026-11-30T08:15:02|2026-11-30T08:20:00|2026-11-30T08:30:00|gres/gpu=2|gres/gpu=2|",
        "7|gpu|COMPLETED|2026-11-30T08:31:00|2026-11-30T08:40:00|2026-11-30T09:40:00|gres/gpu=2|gres/gpu=2|",
        "8.batch|gpu|COMPLETED|2026-11-30T08:31:00|2026-11-30T08:40:00|2026-11-30T09:40:00|gres/gpu=1||",
        "9|gpu|PENDING|2026-11-30T09:00:00|Unknown|Unknown||gres/gpu:h100=1|",
    ]
    path = tmp_path / "sacct_parsable.txt"  # --parsable: a trailing | on every line
    path.write_text("\n".join(rows) + "\n")
    log = load_job_log(path)
    utc = datetime(2026, 11, 30, 8, 31, 0, tzinfo=timezone.utc).timestamp()
    assert list(log.job_ids) == ["7", "9"]
    assert (log.submit[0], log.start[0] - utc, log.end[0] - utc) == (utc, 540.0, 4140.0)
    assert list(log.virtual_cluster) == ["gpu", "gpu"] and log.gpu_request[1] == 1.0
    assert [(bad.line, bad.reason) for bad in log.bad_rows] == [(4, "a step of job 8, whose own line the log lacks")]
    with pytest.raises(WorkloadError, match=re.escape(f"{path}:4: a step of job 8")):
        load_job_log(path, strict=True)
    monkeypatch.undo()
    time.tzset()


def test_slurm_strict_names_file_and_line(logs):
    truth = logs["slurm"]
    first = min(truth["bad_lines"])
    with pytest.raises(WorkloadError, match=re.escape(f"{truth['path']}:{first}: ") + r"\d+ fields where the header"):
        load_workload(truth["path"], strict=True)


def test_slurm_filters_by_partition_and_window(logs):
    truth = logs["slurm"]
    replayed = [(job, want) for job, want in truth["expected"].items()
                if want.status in (FINISHED, RUNNING) and not want.ran_zero]
    a100 = load_workload(truth["path"], virtual_cluster="a100")
    assert list(a100.job_ids) == [job for job, want in replayed if want.virtual_cluster == "a100"]
    cut = sorted(want.submit for _, want in replayed)[50]
    early = load_workload(truth["path"], end=cut)
    assert len(early) == 50
    assert early.log_counts["replayed"] == 50


# ---------------------------------------------------------------- PAI


@pytest.mark.parametrize("header", [False, True])
def test_pai_tables_with_and_without_header(tmp_path, header):
    truth = write_pai_tables(tmp_path / "trace", jobs=220, seed=3, header=header)
    for given in (truth["path"], truth["path"].parent):  # the job table, or the directory of both
        log = load_job_log(given)
        assert log.format == "pai"
        assert_every_job_as_written(log, truth)
        assert log.counts() == truth["counts"]
    assert truth["header"] == header and truth["counts"]["no task"] > 0


def test_pai_sums_tasks_and_rounds_fractions_up(logs):
    truth = logs["pai"]
    log = load_job_log(truth["path"])
    tasks = [row.split(",") for row in truth["task_path"].read_text().splitlines()]
    quarter = next(row[0] for row in tasks if row[8] == "25.0")
    three_halves = next(row[0] for row in tasks if row[2] == "3.0" and row[8] == "50.0")
    ps_worker = next(row[0] for row in tasks if row[1] == "ps" and row[8] == "")
    request = dict(zip(log.job_ids, log.gpu_request))
    start = dict(zip(log.job_ids, log.start))
    assert (request[quarter], request[three_halves], request[ps_worker]) == (0.25, 1.5, 1.0)
    assert start[ps_worker] == min(float(row[4]) for row in tasks if row[0] == ps_worker)
    workload = load_workload(truth["path"])
    gpus = dict(zip(workload.job_ids, workload.gpus))
    assert (gpus[quarter], gpus[three_halves], gpus[ps_worker]) == (1, 2, 1)


def test_pai_bad_task_row_names_the_task_table(logs):
    truth = logs["pai"]
    log = load_job_log(truth["path"])
    assert f"pai_task_table.csv:{truth['bad_task_line']}: plan_gpu 'lots'" in \
        [bad.reason for bad in log.bad_rows if truth["bad_lines"][bad.line] == "plan_gpu"][0]
    with pytest.raises(WorkloadError, match=re.escape(f"{truth['path']}:{min(truth['bad_lines'])}: ")):
        load_job_log(truth["path"], strict=True)
    job_table = truth["path"].read_text().splitlines()
    good = [row for line, row in enumerate(job_table, start=1) if line != min(truth["bad_lines"])]
    truth["path"].with_name("fixed_job_table.csv").write_text("\n".join(good) + "\n")
    truth["task_path"].with_name("fixed_task_table.csv").write_text(truth["task_path"].read_text())
    with pytest.raises(WorkloadError, match=re.escape(f"{truth['task_path'].with_name('fixed_task_table.csv')}:"
                                                      f"{truth['bad_task_line']}: plan_gpu 'lots'")):
        load_job_log(truth["path"].with_name("fixed_job_table.csv"), "pai", strict=True)


def test_pai_without_its_task_table_is_a_clear_error(tmp_path):
    truth = write_pai_tables(tmp_path, jobs=20, seed=1)
    truth["task_path"].unlink()
    with pytest.raises(WorkloadError, match="no task table pai_task_table.csv beside the job table"):
        load_job_log(truth["path"], "pai")
    assert detect_log_format(truth["path"]) is None  # a header-less six-column CSV alone is not told PAI


# ---------------------------------------------------------------- Kubernetes


def test_openb_shares_first_instant_and_not_yet_times(logs):
    truth = logs["k8s-pods"]
    log = load_job_log(truth["path"])
    rows = {row.split(",")[0]: row.split(",") for row in Path(truth["path"]).read_text().splitlines()[1:]
            if row.count(",") == 10}
    index = {job: i for i, job in enumerate(log.job_ids)}
    first = index["openb-pod-0000"]
    assert (log.submit[first], log.start[first]) == (0.0, 0.0)
    shared = next(name for name, row in rows.items() if row[3] == "1" and row[4] not in ("1000", "0"))
    assert log.gpu_request[index[shared]] == int(rows[shared][4]) / 1000 < 1
    not_deleted = [name for name, row in rows.items() if row[7] == "Running" and row[9] in ("", "0")]
    assert {row[9] for name, row in rows.items() if name in not_deleted} == {"", "0"}
    assert all(np.isnan(log.end[index[name]]) for name in not_deleted)
    never_scheduled = [name for name, row in rows.items() if row[7] == "Pending" and row[10] in ("", "0")]
    assert all(np.isnan(log.start[index[name]]) for name in never_scheduled)
    workload = load_workload(truth["path"])
    assert dict(zip(workload.job_ids, workload.gpus))[shared] == 1


def test_kubectl_items_lines_namespaces_and_gpu_fraction(logs):
    truth = logs["kubectl"]
    log = load_job_log(truth["path"])
    text = Path(truth["path"]).read_text().splitlines()
    assert {text[line - 1] for line in log.lines} == {"        {"}
    assert set(log.virtual_cluster) == {"team-a", "team-b", "research"}
    document = json.loads(Path(truth["path"]).read_text())
    fraction = next(f"{item['metadata']['namespace']}/{item['metadata']['name']}" for item in document["items"]
                    if item["metadata"].get("annotations", {}).get("gpu-fraction") == "0.5")
    assert dict(zip(log.job_ids, log.gpu_request))[fraction] == 0.5
    assert dict(zip(load_workload(truth["path"]).job_ids, load_workload(truth["path"]).gpus))[fraction] == 1
    first_bad = min(truth["bad_lines"])
    with pytest.raises(WorkloadError, match=re.escape(f"{truth['path']}:{first_bad}: item ") +
                       r"\d+ \(pod team-a/bad-\d+\): metadata.creationTimestamp 'last tuesday'"):
        load_job_log(truth["path"], strict=True)


def test_kubectl_rejects_json_that_is_not_a_pod_list(tmp_path):
    path = tmp_path / "nodes.json"
    path.write_text('{\n    "apiVersion": "v1",\n    "kind": "List",\n    "metadata": {}\n}\n')
    with pytest.raises(WorkloadError, match='not a kubectl pod list: no "items" array'):
        load_job_log(path)
    path.write_text('{\n    "items": [\n        {"metadata": {}},\n    oops\n')
    with pytest.raises(WorkloadError, match=re.escape(f"{path}:4: not JSON")):
        load_job_log(path)


# ---------------------------------------------------------------- detection, wrong formats, summary


def test_detection_leaves_trace_csvs_alone(logs):
    assert {fmt: detect_log_format(truth["path"]) for fmt, truth in logs.items()} == \
        {fmt: fmt for fmt in logs}
    assert detect_log_format(HELIOS_CSV) is None
    assert list(load_workload(HELIOS_CSV).job_ids) == ["j1", "j2", "j6", "j7"]
    with pytest.raises(WorkloadError, match="not a scheduler log this reads"):
        load_job_log(HELIOS_CSV)


def test_wrong_format_is_a_clear_error(logs):
    slurm = logs["slurm"]["path"]
    with pytest.raises(WorkloadError, match="not pai input: it reads as slurm"):
        load_workload(slurm, "pai")
    with pytest.raises(WorkloadError, match="header lacks philly column.*it reads as a slurm log"):
        load_workload(slurm, "philly")
    with pytest.raises(WorkloadError, match="not sacct --parsable2 output with a header"):
        load_workload(HELIOS_CSV, "slurm")
    with pytest.raises(WorkloadError, match="not an openb pod list: the header lacks name"):
        load_workload(HELIOS_CSV, "k8s-pods")
    with pytest.raises(WorkloadError, match="a slurm log carries no estimates"):
        load_workload(slurm, estimator="lightgbm")


def test_log_summary_says_what_was_left_out_and_approximated(logs):
    truth = logs["pai"]
    counts = truth["counts"]
    assert log_summary(load_workload(truth["path"])) == (
        f"{truth['path']}: pai log: replaying {counts['replayed']} jobs, {truth['replayed_censored']} still "
        f"running at the log's end (replayed for the time they had run), {truth['replayed_fractional']} asking "
        f"for a fraction of a GPU (rounded up to whole GPUs); left out: {counts[NEVER_STARTED]} never started, "
        f"{counts[PENDING]} still pending, {counts['ran 0 s']} ran 0 s, {counts['no GPU']} with no GPU, "
        f"{counts['no task']} with no task")
    assert truth["replayed_censored"] > 0 and truth["replayed_fractional"] > 0
    assert log_summary(load_workload(HELIOS_CSV)) is None
