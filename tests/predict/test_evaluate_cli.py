"""itercast evaluate end to end on the tiny collection."""

import json

import pytest

from itercast.cli import main
from itercast.predict.dataset import Dataset
from itercast.predict.evaluate import MODEL_NAMES
from tiny_collection import slowed_copies, tiny_collection

QUICK = ["--rounds", "5", "--ets-seconds", "1"]


def test_prints_one_table_with_every_model_and_writes_the_plot(tmp_path, capsys):
    plot, families = tmp_path / "evaluate.png", tmp_path / "families.csv"
    code = main(["evaluate", str(tiny_collection()), "--split", "config", "--seed", "1", *QUICK,
                 "--plot", str(plot), "--families-csv", str(families)])
    out = capsys.readouterr().out
    assert code == 0
    table_rows = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert all(name in table_rows for name in MODEL_NAMES)
    assert "un-profiled step_ms" in out and "profiled iteration" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert families.read_text().splitlines()[0] == "family,configurations," + ",".join(MODEL_NAMES)


def test_table_columns_line_up_with_a_long_model_name(capsys):
    assert main(["evaluate", str(tiny_collection()), "--models", "median,lightgbm-constant", "--folds", "2",
                 *QUICK]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("model "))
    rows = [line for line in lines if line.split()[:1] in (["median"], ["lightgbm-constant"])][:2]
    assert len(rows) == 2
    # each figure ends where its heading does
    mre_end = header.index("MRE") + len("MRE")
    assert all(row[:mre_end].endswith("%") for row in rows)


def test_json_has_both_labels_for_each_chosen_model(capsys):
    code = main(["evaluate", str(tiny_collection()), "--models", "median,linear", "--folds", "2", "--json", *QUICK])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and set(result["models"]) == {"median", "linear"}
    assert sum(result["test_sizes"]) == result["configurations"]
    for model in result["models"].values():
        assert set(model["step_ms"]) == set(model["profiled"]) == {"mre", "rmse_ms", "p90"}


def test_calibration_folds_reach_the_predictors_models_only(capsys, monkeypatch):
    from itercast.predict import evaluate

    seen = {}
    fit = evaluate.fit_hardware_model

    def spy(hardware, samples, model, **options):
        seen.setdefault(getattr(model, "name", type(model).__name__), set()).add(options.get("calibration_folds"))
        return fit(hardware, samples, model, **options)

    monkeypatch.setattr(evaluate, "fit_hardware_model", spy)
    assert main(["evaluate", str(tiny_collection()), "--models", "lightgbm,lightgbm-constant,opbased",
                 "--folds", "2", "--json", *QUICK]) == 0
    assert seen == {"lightgbm": {2}, "lightgbm-constant": {2}, "opbased": {None}}
    seen.clear()
    main(["evaluate", str(tiny_collection()), "--models", "lightgbm", "--calibration-folds", "0", "--json", *QUICK])
    assert seen == {"lightgbm": {None}}


def test_limit_configs_uses_a_subset(capsys):
    main(["evaluate", str(tiny_collection()), "--models", "median", "--limit-configs", "6", "--json"])
    assert json.loads(capsys.readouterr().out)["configurations"] == 6


def test_also_on_scores_the_same_models_on_another_collections_configurations(tmp_path, capsys):
    collection = tiny_collection()
    # a collection the full one extends
    earlier = _relabelled_copy(collection, tmp_path, lambda row: row if row["family"] == "mlp" else None)
    rows = Dataset.from_manifest(collection).configs
    assert 0 < len(earlier) < len(rows)
    code = main(["evaluate", str(collection), "--models", "median", "--folds", "2", "--json",
                 "--also-on", str(tmp_path)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["configurations"] == len(rows)
    also = result["also_on"]
    assert also["configurations"] == len(earlier) and [row["family"] for row in also["families"]] == ["mlp"]
    assert also["families"][0]["median"] == pytest.approx(
        next(row["median"] for row in result["families"] if row["family"] == "mlp"))


def test_label_passes_are_named_above_the_table(tmp_path, capsys):
    import shutil

    collection = tiny_collection()
    shutil.copy(collection / "manifest.csv", tmp_path / "manifest.csv")
    (tmp_path / "traces").symlink_to(collection / "traces")
    plain = Dataset.from_manifest(tmp_path).configs
    first = plain[0]
    passes = f"{first.config_id},1,{first.step_ms * 3},ok\n"  # the median of x and 3x is 2x: each strays by 1/2
    (tmp_path / "labels.csv").write_text("config_id,label_pass,step_ms,status\n" + passes)
    assert main(["evaluate", str(tmp_path), "--models", "median", "--folds", "2"]) == 0
    spread = 0.5 / len(plain)
    assert (f"the median of 1-2 label passes per configuration; a pass strays from its median by "
            f"{spread:.1%} on average") in capsys.readouterr().out
    every = "".join(f"{config.config_id},1,{config.step_ms},ok\n" for config in plain)
    (tmp_path / "labels.csv").write_text("config_id,label_pass,step_ms,status\n" + every)
    assert main(["evaluate", str(tmp_path), "--models", "median", "--folds", "2"]) == 0
    assert "the median of 2 label passes per configuration; a pass strays from its median by 0.0%" in \
        capsys.readouterr().out


def test_cache_is_written_then_read(tmp_path, capsys, monkeypatch):
    from itercast.predict import evaluate

    cache = tmp_path / "samples.pkl"
    arguments = ["evaluate", str(tiny_collection()), "--models", "median", "--json", "--cache", str(cache)]
    main(arguments)
    first = capsys.readouterr().out
    assert cache.exists()
    monkeypatch.setattr(evaluate, "featurise", lambda configs: pytest.fail("featurised despite the cache"))
    main(arguments)
    assert json.loads(capsys.readouterr().out)["models"]["median"]["step_ms"] == \
        json.loads(first)["models"]["median"]["step_ms"]


def test_cached_samples_carry_the_manifests_current_labels(tmp_path, monkeypatch):
    """A configuration collected again keeps its id and trace path: its new labels count, not the cached."""
    from dataclasses import replace

    from itercast.predict import evaluate

    dataset = Dataset.from_manifest(tiny_collection())
    cache = tmp_path / "samples.pkl"
    evaluate.load_samples(dataset, cache)
    relabelled = Dataset([replace(c, step_ms=2 * c.step_ms) for c in dataset.configs], dataset.source)
    monkeypatch.setattr(evaluate, "featurise", lambda configs: pytest.fail("featurised despite the cache"))
    samples = evaluate.load_samples(relabelled, cache)
    assert [s.config.step_ms for s in samples] == [2 * c.step_ms for c in dataset.configs]


def test_a_trace_written_again_is_featurised_again(tmp_path, monkeypatch):
    """A configuration collected again into the same directory has a new trace at the same path."""
    import os
    import shutil

    from itercast.predict import evaluate

    collection = tmp_path / "collection"
    shutil.copytree(tiny_collection(), collection)
    dataset = Dataset.from_manifest(collection)
    cache = tmp_path / "samples.pkl"
    evaluate.load_samples(dataset, cache)
    rewritten = dataset.configs[0].trace_path
    os.utime(rewritten, ns=(rewritten.stat().st_atime_ns, rewritten.stat().st_mtime_ns + 10**9))
    featurised = []
    monkeypatch.setattr(evaluate, "featurise", lambda configs: featurised.append(len(configs)) or [])
    evaluate.load_samples(dataset, cache)
    assert featurised == [len(dataset.configs)]


def test_bad_dataset_path_exits_non_zero_with_a_message(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "missing"), "--models", "median"]) != 0
    assert "no manifest" in capsys.readouterr().err


def test_unknown_model_is_refused_before_training(capsys):
    assert main(["evaluate", str(tiny_collection()), "--models", "median,prophet"]) == 2
    assert "argument --models: invalid choice: 'prophet'" in capsys.readouterr().err


def test_a_missing_package_is_named_before_any_training(capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else find_spec(name, *a))
    assert main(["evaluate", str(tiny_collection()), "--models", "median,ets", *QUICK]) != 0
    assert "pip install torch" in capsys.readouterr().err


def _relabelled_copy(collection, directory, relabel) -> list[dict]:
    """A collection of the same traces whose manifest rows pass through ``relabel(row)``
    (None drops the row); returns the rows written."""
    import csv

    with open(collection / "manifest.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    kept = [row for row in (relabel(dict(row)) for row in rows) if row is not None]
    (directory / "traces").symlink_to(collection / "traces")
    with open(directory / "manifest.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    return kept


def test_repeat_row_rescales_the_other_collections_labels_by_the_drift(tmp_path, capsys):
    collection = tiny_collection()
    configs = Dataset.from_manifest(collection).configs
    odd = configs[0].config_id

    def twice_as_slow(row):  # the machine ran everything 2x as long, and one configuration 2.2x
        factor = 2.2 if row["config_id"] == odd else 2.0
        row["step_ms"] = str(float(row["step_ms"]) * factor)
        row["profiled_step_ms"] = str(float(row["profiled_step_ms"]) * factor)
        return row

    _relabelled_copy(collection, tmp_path, twice_as_slow)
    code = main(["evaluate", str(collection), "--models", "median", "--folds", "2", "--json",
                 "--repeat", str(tmp_path)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["configurations"] == len(configs)
    # the drift, learnt on each fold's training configurations, is 1/2: only the odd one misses, by 10%
    assert result["models"]["repeat"]["step_ms"]["mre"] == pytest.approx(0.1 / len(configs))
    assert result["models"]["median"]["step_ms"]["mre"] > result["models"]["repeat"]["step_ms"]["mre"]


def test_repeat_scores_every_model_on_the_configurations_both_collections_have(tmp_path, capsys):
    collection = tiny_collection()
    kept = _relabelled_copy(collection, tmp_path, lambda row: row if row["family"] == "mlp" else None)
    assert 0 < len(kept) < len(Dataset.from_manifest(collection).configs)
    assert main(["evaluate", str(collection), "--models", "median", "--folds", "2", "--repeat",
                 str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{len(kept)} configurations" in out and "scored on these configurations only" in out
    repeat_row = next(line.split() for line in out.splitlines() if line.startswith("repeat "))
    assert repeat_row[1] == "0.0%"  # the same labels: no drift, no miss


def test_repeat_without_common_configurations_is_refused_before_training(tmp_path, capsys, monkeypatch):
    from itercast.predict import evaluate

    def no_training(*args, **kwargs):
        raise AssertionError("a model was trained")

    monkeypatch.setattr(evaluate, "evaluate_model", no_training)
    collection = tiny_collection()

    def renamed(row):
        row["config_id"] = "other-" + row["config_id"]
        return row

    _relabelled_copy(collection, tmp_path, renamed)
    assert main(["evaluate", str(collection), "--models", "median", "--folds", "2", "--repeat",
                 str(tmp_path)]) != 0
    assert f"{tmp_path / 'manifest.csv'}: no configuration in common" in capsys.readouterr().err


def test_repeat_with_a_zero_label_is_refused_naming_its_row(tmp_path, capsys):
    collection = tiny_collection()
    zeroed = Dataset.from_manifest(collection).configs[0].config_id

    def zero_one(row):  # a broken row in the other collection: scored or dividing, it would skew the table
        if row["config_id"] == zeroed:
            row["step_ms"] = "0"
        return row

    _relabelled_copy(collection, tmp_path, zero_one)
    assert main(["evaluate", str(collection), "--models", "median", "--folds", "2",
                 "--repeat", str(tmp_path)]) != 0
    assert f"{tmp_path / 'manifest.csv'}, line 2: bad row (step_ms '0' is not a positive time" in capsys.readouterr().err


def test_the_machine_speed_is_named_above_the_table_unless_turned_off(tmp_path, capsys):
    slowed_copies(tmp_path)
    assert main(["evaluate", str(tmp_path), "--models", "median", "--folds", "2"]) == 0
    assert "divided by the machine's speed then: (reference time / median) ** 1.00, fitted on 36 label-pass pairs" \
        in capsys.readouterr().out
    assert main(["evaluate", str(tmp_path), "--models", "median", "--folds", "2", "--no-machine-speed"]) == 0
    assert "machine's speed" not in capsys.readouterr().out
    assert main(["evaluate", str(tmp_path), "--models", "median", "--folds", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["machine_speed"]["exponent"] == pytest.approx(1.0)


def test_cached_samples_are_divided_by_their_configurations_current_slowdown(tmp_path, monkeypatch):
    from dataclasses import replace

    from itercast.predict import evaluate

    dataset = Dataset.from_manifest(tiny_collection())
    cache = tmp_path / "samples.pkl"
    measured = evaluate.load_samples(dataset, cache)
    slowed = Dataset([replace(c, slowdown=2.0) for c in dataset.configs], dataset.source)
    monkeypatch.setattr(evaluate, "featurise", lambda configs: pytest.fail("featurised despite the cache"))
    halved = evaluate.load_samples(slowed, cache)
    for before, after in zip(measured, halved):
        assert after.windows.y == pytest.approx(before.windows.y / 2)
        assert after.head_tail_ns == pytest.approx(before.head_tail_ns / 2)
        assert after.profiled_ns == pytest.approx(before.profiled_ns / 2)


def test_predictions_csv_holds_every_configuration_once_with_each_models_held_out_prediction(tmp_path, capsys):
    import csv

    from itercast.predict.evaluate import PREDICTED_PREFIX, PREDICTION_COLUMNS

    path = tmp_path / "predictions.csv"
    assert main(["evaluate", str(tiny_collection()), "--models", "median,linear", "--folds", "2", "--json",
                 "--predictions-csv", str(path), *QUICK]) == 0
    rows = list(csv.DictReader(path.open()))
    configs = {config.config_id: config for config in Dataset.from_manifest(tiny_collection()).configs}
    assert sorted(row["config_id"] for row in rows) == sorted(configs)
    assert list(rows[0])[:len(PREDICTION_COLUMNS)] == list(PREDICTION_COLUMNS)
    for row in rows:
        config = configs[row["config_id"]]
        assert float(row["measured_ms"]) == pytest.approx(config.step_ms, rel=1e-5)
        assert row["model"] == config.model and int(row["batch_size"]) == config.batch_size
        assert float(row[PREDICTED_PREFIX + "median"]) > 0 and float(row[PREDICTED_PREFIX + "linear"]) > 0
    # the file holds the predictions the reported errors were computed from
    reported = json.loads(capsys.readouterr().out)["models"]
    for name in ("median", "linear"):
        errors = [abs(float(row[PREDICTED_PREFIX + name]) / float(row["measured_ms"]) - 1) for row in rows]
        assert sum(errors) / len(errors) == pytest.approx(reported[name]["step_ms"]["mre"], rel=1e-4)
