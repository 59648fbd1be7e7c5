import csv

import pytest

from itercast.cli import main
from itercast.collect import zoo

pytest.importorskip("torch")


def test_collect_exits_zero_and_writes_the_manifest(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["collect", "--out", str(out), "--models", "mlp_512x3", "--batch-sizes", "2",
                 "--input-sizes", "16"])
    assert code == 0
    with open(out / "manifest.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["model"], row["batch_size"], row["input_shape"], row["status"])
            for row in rows] == [("mlp_512x3", "2", "16", "ok")]
    assert (out / rows[0]["trace_path"]).exists()
    assert "1 configurations" in capsys.readouterr().out


def test_unknown_model_is_a_clear_error_with_nonzero_exit(tmp_path, capsys):
    code = main(["collect", "--out", str(tmp_path), "--models", "resnet18", "not_a_model"])
    assert code != 0
    error = capsys.readouterr().err
    assert "argument --models: invalid choice: 'not_a_model'" in error
    assert not (tmp_path / "manifest.csv").exists()


def test_missing_out_is_an_error(capsys):
    assert main(["collect", "--models", "resnet18"]) != 0
    assert "--out DIR is required" in capsys.readouterr().err


def test_list_prints_the_zoo(capsys):
    assert main(["collect", "--list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in zoo.MODELS)


def recorded_collect(monkeypatch) -> dict:
    """collect() replaced by one that records the models and settings the CLI hands it, collecting nothing."""
    recorded = {}

    def record(out, models, **settings):
        recorded.update(settings, models=models)
        return []

    monkeypatch.setattr("itercast.collect.collect", record)
    return recorded


def test_the_blind_suite_lists_and_collects_its_own_models(tmp_path, monkeypatch, capsys):
    from itercast.collect import blind

    assert main(["collect", "--list", "--suite", "blind"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in blind.MODELS) and "resnet18 " not in listing
    chosen = recorded_collect(monkeypatch)
    assert main(["collect", "--out", str(tmp_path), "--suite", "blind"]) == 0
    assert chosen["models"] == list(blind.MODELS)
    assert main(["collect", "--out", str(tmp_path), "--suite", "blind", "--families", "graph"]) == 0
    assert chosen["models"] == ["gcn_128x3"]


def test_families_narrow_the_selection(tmp_path, monkeypatch):
    chosen = recorded_collect(monkeypatch)
    assert main(["collect", "--out", str(tmp_path), "--families", "recommender"]) == 0
    assert chosen["models"] == [spec.name for spec in zoo.by_family()["recommender"]]


def test_label_passes_reach_the_collection(tmp_path, monkeypatch):
    settings = recorded_collect(monkeypatch)
    assert main(["collect", "--out", str(tmp_path), "--label-passes", "3"]) == 0
    assert settings["label_passes"] == 3
    assert main(["collect", "--out", str(tmp_path)]) == 0
    assert settings["label_passes"] == 1 and settings["worker_per_model"] is False
    assert main(["collect", "--out", str(tmp_path), "--worker-per-model"]) == 0
    assert settings["worker_per_model"] is True
