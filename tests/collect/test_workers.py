"""Several workers: planned per core or GPU, dealt so that they finish together, stopped and resumed whole."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from itercast.collect import collect
from itercast.collect.manifest import LABEL_COLUMNS, LABELS_NAME, MANIFEST_NAME, Manifest
from itercast.collect.pool import deal, plan_slots
from itercast.collect.worker import Worker
from itercast.errors import ItercastError

def test_one_worker_per_core_each_pinned_to_its_own():
    slots, warning = plan_slots(0, "cpu", 1, configurations=100, cores=[0, 1, 2, 3])
    assert [slot.cores for slot in slots] == [(0,), (1,), (2,), (3,)] and warning is None
    slots, _ = plan_slots(0, "cpu", 2, configurations=100, cores=[0, 1, 2, 3])
    assert [slot.cores for slot in slots] == [(0, 1), (2, 3)]
    slots, _ = plan_slots(2, "cpu", 1, configurations=100, cores=[4, 7])
    assert [slot.cores for slot in slots] == [(4,), (7,)]


def test_never_more_workers_than_configurations():
    assert len(plan_slots(0, "cpu", 1, configurations=3, cores=list(range(8)))[0]) == 3
    assert len(plan_slots(5, "cpu", 1, configurations=1, cores=list(range(8)))[0]) == 1


def test_more_workers_than_cores_is_allowed_with_a_warning():
    slots, warning = plan_slots(3, "cpu", 1, configurations=10, cores=[0, 1])
    assert [slot.cores for slot in slots] == [(0,), (1,), (0,)]
    assert "slower" in warning and "3 workers" in warning


def test_on_a_gpu_node_one_worker_per_device_each_seeing_its_own():
    slots, warning = plan_slots(0, "cuda", 1, configurations=100, cores=list(range(16)), gpus=8)
    assert [dict(slot.env)["CUDA_VISIBLE_DEVICES"] for slot in slots] == [str(k) for k in range(8)]
    assert warning is None
    assert sorted(core for slot in slots for core in slot.cores) == list(range(16))
    slots, _ = plan_slots(0, "cuda:1", 1, configurations=100, cores=[0, 1], gpus=8)
    assert len(slots) == 2 and all(not slot.env for slot in slots)  # a named device: workers by core


@pytest.mark.parametrize("count", [-1, 1.5, "2", True])
def test_a_bad_worker_count_is_refused_naming_the_option(tmp_path, count):
    with pytest.raises(ItercastError, match="--workers"):
        collect(tmp_path, models=["dlrm_small"], workers=count)


@pytest.mark.parametrize("count, message", [("-1", "must be 0 or more"), ("two", "invalid")])
def test_the_command_line_refuses_a_bad_worker_count(tmp_path, count, message):
    done = subprocess.run([sys.executable, "-m", "itercast", "collect", "--out", str(tmp_path), "--workers", count],
                          capture_output=True, text=True, env=environment())
    assert done.returncode == 2 and "--workers" in done.stderr and message in done.stderr


def test_the_tail_is_dealt_one_configuration_at_a_time():
    grouped = [["a1", "a2"], ["b1", "b2"], ["c1", "c2", "c3"]]
    assert deal(grouped, 1) == grouped
    assert deal(grouped, 2) == [["a1", "a2"], ["b1"], ["b2"], ["c1"], ["c2"], ["c3"]]
    assert deal([["a1", "a2"]], 2) == [["a1"], ["a2"]]


def test_a_worker_process_runs_pinned_to_its_cores():
    pytest.importorskip("torch")
    core = sorted(os.sched_getaffinity(0))[-1]
    worker = Worker(cores=(core,))
    try:
        worker._start()
        assert os.sched_getaffinity(worker._process.pid) == {core}
    finally:
        worker.stop()


def test_a_worker_settles_its_environment_before_torch_loads():
    probe = ("import os, sys; from itercast.collect.worker import _settle; "
             "_settle((0,), {'CUDA_VISIBLE_DEVICES': '3'}); "
             "print(os.environ['CUDA_VISIBLE_DEVICES'], sorted(os.sched_getaffinity(0)), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment())
    assert done.stdout.split() == ["3", "[0]", "False"], done.stderr


def environment() -> dict:
    """This process's environment, with the itercast it imported (the source tree's or an installed one) first."""
    import itercast

    where = str(Path(itercast.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([where, os.environ.get("PYTHONPATH", "")])}


GRID = ["--models", "dlrm_small,ncf_small,mlp_512x3", "--batch-sizes", "2,4", "--input-sizes", "16"]


@pytest.mark.slow
def test_a_two_worker_collection_killed_by_sigterm_resumes_to_the_same_configurations(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "zoo"
    command = [sys.executable, "-m", "itercast", "-q", "collect", "--out", str(out), "--workers", "2", *GRID]
    process = subprocess.Popen(command, env=environment(), start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest = out / MANIFEST_NAME
    deadline = time.monotonic() + 240
    while not (manifest.exists() and len(Manifest(manifest).rows()) >= 1) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "SIGTERM" in stderr and "again" in stderr
    assert not group_alive_after(process.pid, seconds=15)  # no worker outlives the collection
    stopped = Manifest(manifest).rows()
    assert 1 <= len(stopped) < 6
    assert_traces_match_rows(out, stopped)

    resumed = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    rows = Manifest(manifest).rows()
    expected = {f"{model}-b{batch}-s16-float32-cpu-t1" for model in ("dlrm_small", "ncf_small", "mlp_512x3")
                for batch in (2, 4)}
    assert sorted(row["config_id"] for row in rows) == sorted(expected)  # each configuration once
    assert rows[:len(stopped)] == stopped and {row["status"] for row in rows} == {"ok"}
    assert_traces_match_rows(out, rows)


def group_alive_after(group: int, seconds: float) -> bool:
    """Whether a process of ``group`` is left ``seconds`` on (a killed worker may stay a zombie a moment)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.2)
    return True


def assert_traces_match_rows(out: Path, rows):
    on_disk = {f"traces/{path.name}" for path in (out / "traces").iterdir()}
    assert on_disk == {row["trace_path"] for row in rows if row["status"] == "ok"}


@pytest.mark.slow
def test_a_collection_runs_on_a_local_dask_cluster(tmp_path, quick_protocol):
    pytest.importorskip("torch")
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        rows = collect(tmp_path, models=["dlrm_small", "ncf_small"], batch_sizes=(2, 4), input_sizes=(16,),
                       protocol=quick_protocol, dask=client, label_passes=2)
    assert len(rows) == 4 and {row["status"] for row in rows} == {"ok"}, [row["message"] for row in rows]
    assert_traces_match_rows(tmp_path, rows)
    assert all((tmp_path / row["trace_path"]).stat().st_size > 1000 for row in rows)
    labels = Manifest(tmp_path / LABELS_NAME, LABEL_COLUMNS)
    assert sorted(row["config_id"] for row in labels.rows()) == sorted(row["config_id"] for row in rows)


SEEN_IN_CHILD = []


def remember_and_answer(value):
    SEEN_IN_CHILD.append(value)
    return {"status": "ok", "value": value, "pid": os.getpid()}


def sleep_long():
    time.sleep(60)


def die_as_the_oom_killer_kills():
    os.kill(os.getpid(), signal.SIGKILL)


def exit_without_an_answer():
    raise SystemExit(3)


def test_a_fresh_process_answers_and_leaves_this_one_untouched():
    from itercast.collect.worker import in_fresh_process

    answer = in_fresh_process(remember_and_answer, (7,), time_limit_s=30)
    assert answer["status"] == "ok" and answer["value"] == 7 and answer["pid"] != os.getpid()
    assert SEEN_IN_CHILD == []


@pytest.mark.parametrize("function, status", [(sleep_long, "timeout"), (die_as_the_oom_killer_kills, "oom"),
                                              (exit_without_an_answer, "error")])
def test_a_fresh_process_that_hangs_or_dies_becomes_a_status(function, status):
    from itercast.collect.worker import in_fresh_process

    started = time.monotonic()
    answer = in_fresh_process(function, (), time_limit_s=1.0)
    assert answer["status"] == status and answer["message"]
    assert time.monotonic() - started < 10
