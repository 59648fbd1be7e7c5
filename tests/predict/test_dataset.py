import csv

import pytest

from itercast.errors import ItercastError
from itercast.predict.dataset import Dataset

MANIFEST = ["config_id", "model", "family", "arch", "device", "cpu_model", "threads", "trace_path",
            "step_ms", "profiled_step_ms", "batch_size", "status"]
LABELS = ["config_id", "label_pass", "step_ms", "status"]


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def manifest_row(config_id, step_ms, status="ok", model="resnet18", arch="resnet"):
    return {"config_id": config_id, "model": model, "family": "cnn", "arch": arch, "device": "cpu",
            "cpu_model": "Xeon", "threads": "1", "trace_path": f"traces/{config_id}.json",
            "step_ms": step_ms, "profiled_step_ms": "9.0", "batch_size": "2", "status": status}


@pytest.fixture
def collection(tmp_path):
    write_csv(tmp_path / "manifest.csv", MANIFEST, [
        manifest_row("a", "10.0"), manifest_row("b", "20.0", model="resnet34"),
        manifest_row("c", "", status="oom")])
    return tmp_path


def by_id(dataset):
    return {config.config_id: config for config in dataset.configs}


def test_manifest_rows_become_configs_of_status_ok(collection):
    configs = by_id(Dataset.from_manifest(collection))
    assert sorted(configs) == ["a", "b"]
    assert configs["a"].step_ms == 10.0 and configs["a"].label_passes == 1 and configs["a"].label_spread == 0
    assert configs["b"].model == "resnet34" and configs["b"].line == "resnet"
    assert configs["a"].hardware == "cpu:Xeon:1t"
    assert configs["a"].trace_path == collection / "traces" / "a.json"


def test_label_passes_make_the_label_their_median_with_the_manifest_measurement(collection):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "a", "label_pass": "1", "step_ms": "12.0", "status": "ok"},
        {"config_id": "a", "label_pass": "2", "step_ms": "11.0", "status": "ok"},
        {"config_id": "b", "label_pass": "1", "step_ms": "30.0", "status": "ok"},
        {"config_id": "b", "label_pass": "2", "step_ms": "", "status": "timeout"}])
    configs = by_id(Dataset.from_manifest(collection / "manifest.csv"))
    assert configs["a"].step_ms == 11.0 and configs["a"].label_passes == 3
    assert configs["a"].label_spread == pytest.approx((1 / 11 + 0 + 1 / 11) / 3)
    assert configs["b"].step_ms == 25.0 and configs["b"].label_passes == 2  # the timeout is no label
    assert configs["b"].label_spread == pytest.approx(0.2)


def test_a_bad_label_row_names_the_file_and_line(collection):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "a", "label_pass": "1", "step_ms": "12.0", "status": "ok"},
        {"config_id": "a", "label_pass": "2", "step_ms": "fast", "status": "ok"}])
    with pytest.raises(ItercastError, match=r"labels\.csv, line 3: bad row"):
        Dataset.from_manifest(collection)


def test_a_bad_manifest_row_names_the_file_and_line(collection):
    write_csv(collection / "manifest.csv", MANIFEST, [manifest_row("a", "slow")])
    with pytest.raises(ItercastError, match=r"manifest\.csv, line 2: bad row"):
        Dataset.from_manifest(collection)


def test_a_missing_manifest_or_one_without_ok_rows_is_a_clear_error(tmp_path):
    with pytest.raises(ItercastError, match="no manifest at"):
        Dataset.from_manifest(tmp_path)
    write_csv(tmp_path / "manifest.csv", MANIFEST, [manifest_row("c", "", status="error")])
    with pytest.raises(ItercastError, match="no configuration with status ok"):
        Dataset.from_manifest(tmp_path)
