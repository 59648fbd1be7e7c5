import gzip
import json

import pytest

from itercast.collect import collect
from itercast.collect.manifest import COLUMNS, Manifest
from itercast.collect.manifest import MANIFEST_NAME
from itercast.collect.hardware import cpu_model

torch = pytest.importorskip("torch")

TINY_ZOO = ["squeezenet1_1", "gpt_nano", "dlrm_small"]
BATCH_SIZES = (2, 4)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, quick_protocol):
    out = tmp_path_factory.mktemp("tiny-zoo")
    rows = collect(out, models=TINY_ZOO, batch_sizes=BATCH_SIZES, protocol=quick_protocol)
    return out, rows


def test_every_configuration_of_the_grid_is_recorded_ok(tiny_run):
    out, rows = tiny_run
    assert len(rows) == 3 * 2 * 2  # models x default input sizes x batch sizes
    assert {row["status"] for row in rows} == {"ok"}, [row["message"] for row in rows]
    assert len({row["config_id"] for row in rows}) == len(rows)


def test_rows_carry_typed_labels_and_provenance(tiny_run):
    _, rows = tiny_run
    for row in rows:
        assert set(row) == set(COLUMNS)
        for column, kind in COLUMNS.items():
            if row[column] is not None:
                assert isinstance(row[column], kind), (column, row[column])
        assert row["step_ms"] > 0 and row["profiled_step_ms"] > 0
        assert row["step_ms_min"] <= row["step_ms"] <= row["step_ms_max"]
        assert row["step_ms_iqr"] >= 0 and row["steps"] >= 3
        assert row["profiled_steps"] == 3
        assert row["params"] > 0 and row["threads"] == 1
        assert row["device"] == "cpu" and row["device_name"] == cpu_model()
        assert row["torch_version"] == torch.__version__ and row["dtype"] == "float32"
        assert row["message"] is None


def test_input_shapes_follow_the_family(tiny_run):
    _, rows = tiny_run
    shapes = {(row["model"], row["input_size"]): row["input_shape"] for row in rows}
    assert shapes[("squeezenet1_1", 64)] == "3x64x64"
    assert shapes[("gpt_nano", 64)] == "64"
    assert shapes[("dlrm_small", 8)] == "13;8x8"  # dense features; tables x lookups


def test_traces_hold_the_active_profiler_steps_with_shapes(tiny_run):
    out, rows = tiny_run
    for row in rows:
        with gzip.open(out / row["trace_path"], "rt") as handle:
            events = json.load(handle)["traceEvents"]
        steps = [event for event in events if event.get("name", "").startswith("ProfilerStep#")]
        assert len(steps) == 3, row["config_id"]
        assert any("Input Dims" in event.get("args", {}) for event in events)
    assert not list((out / "traces").glob("*.partial.*"))


def test_manifest_on_disk_matches_the_returned_rows(tiny_run):
    out, rows = tiny_run
    assert Manifest(out / MANIFEST_NAME).rows() == rows


def test_rerun_skips_finished_configurations_and_adds_only_new_ones(tiny_run, quick_protocol):
    out, rows = tiny_run
    again = collect(out, models=TINY_ZOO, batch_sizes=BATCH_SIZES, protocol=quick_protocol)
    assert again == rows
    grown = collect(out, models=["dlrm_small"], batch_sizes=(2, 3), protocol=quick_protocol)
    on_disk = Manifest(out / MANIFEST_NAME).rows()
    assert len(on_disk) == len(rows) + 2  # dlrm_small at batch 3, two input sizes
    assert len(grown) == 4 and {row["batch_size"] for row in grown} == {2, 3}


@pytest.mark.slow
def test_label_passes_time_each_ok_configuration_again_pass_after_pass(tmp_path, quick_protocol):
    from itercast.collect.manifest import LABEL_COLUMNS
    from itercast.collect.manifest import LABELS_NAME
    from itercast.collect.runner import grid, resolve_models

    failed = grid(resolve_models(["dlrm_small"]), (4,), (1,), "float32", "cpu", 1)[0]
    Manifest(tmp_path / MANIFEST_NAME).append({**failed.row(), "status": "error", "message": "x"})
    collect(tmp_path, models=["dlrm_small"], batch_sizes=(2, 4), input_sizes=(1,),
            protocol=quick_protocol, label_passes=3)
    labels = Manifest(tmp_path / LABELS_NAME, LABEL_COLUMNS)
    rows = labels.rows()
    assert [(row["config_id"], row["label_pass"]) for row in rows] == [
        ("dlrm_small-b2-s1-float32-cpu-t1", 1), ("dlrm_small-b2-s1-float32-cpu-t1", 2)]
    assert all(row["status"] == "ok" and row["step_ms"] > 0 and row["steps"] >= 3 for row in rows)
    collect(tmp_path, models=["dlrm_small"], batch_sizes=(2, 4), input_sizes=(1,),
            protocol=quick_protocol, label_passes=4)
    assert [row["label_pass"] for row in labels.rows()] == [1, 2, 3]  # only the missing pass


def test_label_passes_long_after_the_traces_are_warned_about():
    from datetime import datetime, timedelta, timezone

    from itercast.collect.runner import label_pass_delay_warning

    now = datetime(2026, 12, 3, 23, 32, tzinfo=timezone.utc)
    traces = ["2026-12-03T18:20:17+00:00", "2026-12-03T18:48:43+00:00", ""]
    warning = label_pass_delay_warning(traces, now)
    assert warning.startswith("warning: label passes begin 4.7 h after the last trace")
    assert label_pass_delay_warning(traces, datetime(2026, 12, 3, 19, 30, tzinfo=timezone.utc)) is None
    assert label_pass_delay_warning(traces, datetime(2026, 12, 3, 18, 48, 43, tzinfo=timezone.utc)
                                    + timedelta(hours=1, seconds=1)) is not None
    assert label_pass_delay_warning([], now) is None
    assert "4.7 h" in label_pass_delay_warning(["2026-12-03T18:48:43"], now)  # no offset: UTC


def test_label_passes_write_the_warning_before_they_begin(tmp_path, monkeypatch):
    import io

    from itercast.collect import runner

    from itercast.collect import pool

    class InstantWorker:
        def __init__(self, log_path=None, cores=(), env=None):
            pass

        lost_last_block = False

        def stop(self, kill=False):
            pass

        def close(self):
            pass

        def run(self, configs, protocol, trace_dir, time_limit_s):
            return [{"status": "ok", "step_ms": 1.0, "steps": 3} for _ in configs]

    monkeypatch.setattr(pool, "Worker", InstantWorker)
    config = runner.grid(runner.resolve_models(["dlrm_small"]), (2,), (1,), "float32", "cpu", 1)[0]
    for finished, warned in (("2026-01-01T00:00:00+00:00", True), (runner.utc_now(), False)):
        stream = io.StringIO()
        labels = tmp_path / f"labels-{warned}.csv"
        runner.time_label_passes([config], Manifest(labels, runner.LABEL_COLUMNS), 2, 10.0, None, stream, traces_finished=[finished])
        assert ("warning: label passes begin" in stream.getvalue()) == warned
        assert len(Manifest(labels, runner.LABEL_COLUMNS).rows()) == 1


def test_label_passes_below_one_are_refused(tmp_path):
    from itercast.errors import ItercastError

    with pytest.raises(ItercastError, match="at least 1"):
        collect(tmp_path, models=["dlrm_small"], label_passes=0)


@pytest.mark.slow
@pytest.mark.parametrize("worker_per_model, starts", [(True, 2), (False, 1)])
def test_each_model_runs_in_a_worker_of_its_own(tmp_path, quick_protocol, monkeypatch, worker_per_model, starts):
    from itercast.collect.worker import Worker

    started = []
    real_start = Worker._start

    def counting_start(worker):
        started.append(worker)
        real_start(worker)

    monkeypatch.setattr(Worker, "_start", counting_start)
    rows = collect(tmp_path, models=["dlrm_small", "mlp_512x3"], batch_sizes=(2, 4), input_sizes=(16,),
                   protocol=quick_protocol, worker_per_model=worker_per_model, workers=1)
    assert [row["status"] for row in rows] == ["ok"] * 4
    assert len(started) == starts


def test_blocks_keep_the_grid_order_and_split_models_only_when_asked():
    from types import SimpleNamespace

    from itercast.collect.runner import blocks

    configs = [SimpleNamespace(spec=SimpleNamespace(name=name), n=index)
               for index, name in enumerate(("a", "a", "b", "a", "a"))]
    names = lambda grouped: [[config.n for config in block] for block in grouped]  # noqa: E731
    assert names(blocks(configs, 2)) == [[0, 1], [2, 3], [4]]
    assert names(blocks(configs, 8)) == [[0, 1, 2, 3, 4]]
    assert names(blocks(configs, 8, split_models=True)) == [[0, 1], [2], [3, 4]]


def test_a_fresh_worker_follows_each_block_when_asked():
    from itercast.collect.pool import BlockJob, run_block

    class Counting:
        lost_last_block = False
        stops = 0

        def run(self, configs, protocol, trace_dir, time_limit_s):
            return [{"status": "ok"} for _ in configs]

        def stop(self):
            self.stops += 1

    for fresh, stops in ((True, 1), (False, 0)):
        worker = Counting()
        run_block(worker, ["x", "y"], BlockJob(None, False, 1.0, worker_per_model=fresh), None)
        assert worker.stops == stops
