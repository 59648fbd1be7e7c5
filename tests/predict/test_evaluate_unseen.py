"""Evaluating on what training never saw: the op-type split, another collection as the test set, and the
models that read the test trace's own times (trace-time, hybrid)."""

import csv
import json
import shutil

import numpy as np
import pytest

from itercast.cli import main
from itercast.errors import ItercastError
from itercast.predict.baselines import TraceTime
from itercast.predict.evaluate import Settings, evaluate, op_type_folds
from tiny_collection import tiny_collection, tiny_samples

QUICK = ["--rounds", "5", "--ets-seconds", "1"]


@pytest.fixture(scope="module")
def samples():
    return tiny_samples()


def test_the_op_type_split_tests_only_on_op_types_training_never_ran(samples):
    folds = op_type_folds(samples, folds=3, seed=0)
    tested = np.concatenate([test for _, test in folds])
    assert len(tested) == len(set(tested.tolist()))  # every configuration tested at most once
    for train, test in folds:
        trained_ops = set().union(*(samples[i].op_names for i in train))
        for i in test:
            assert set(samples[i].op_names) - trained_ops, samples[i].config.config_id
        assert not {samples[i].config.line or samples[i].config.model for i in train} & \
            {samples[i].config.line or samples[i].config.model for i in test}


def test_the_op_type_split_needs_rare_op_types(samples):
    with pytest.raises(ItercastError, match="op types that at most 50% of the lines run"):
        op_type_folds(samples, folds=1000, seed=0)


def test_trace_time_scales_the_traces_own_step_by_the_training_ratio(samples):
    model = TraceTime().fit(samples[:6])
    ratios = [s.config.step_ms / (s.profiled_ns / 1e6) for s in samples[:6]]
    assert model.ratio == pytest.approx(np.median(ratios))
    profiled, unprofiled = model.predict_samples(samples[6:])
    np.testing.assert_allclose(profiled, [s.profiled_ns / 1e6 for s in samples[6:]])
    np.testing.assert_allclose(unprofiled, profiled * model.ratio)


def test_hybrid_variants_share_lightgbms_fit_and_differ_only_in_pricing(samples):
    settings = Settings(models=("lightgbm", "hybrid-w0", "hybrid-w100", "oracle"), split="arch", folds=2, rounds=5)
    result = {r.name: r for r in evaluate(samples, settings).results}
    assert result["lightgbm"].train_seconds == result["hybrid-w0"].train_seconds  # one fit per fold
    # at weight 1 the hybrid is the trace's measured op times through the same reconciliation: the oracle
    np.testing.assert_allclose(result["hybrid-w100"].predicted_ms, result["oracle"].predicted_ms, rtol=1e-9)
    # at weight 0 it is lightgbm's prediction wherever no op was unseen, and another elsewhere
    unseen = np.array(result["hybrid-w0"].unseen_shares) > 0
    assert unseen.any() and not unseen.all()
    same = np.isclose(result["hybrid-w0"].predicted_ms, result["lightgbm"].predicted_ms, rtol=1e-9)
    np.testing.assert_array_equal(same, ~unseen)


def split_collection(tmp_path):
    """Two collections of the tiny one's configurations: the convolutional networks, and the rest."""
    source = tiny_collection()
    with open(source / "manifest.csv") as handle:
        rows = list(csv.DictReader(handle))
    directories = {}
    for name, keep in (("train", lambda row: row["family"] != "cnn"), ("test", lambda row: row["family"] == "cnn")):
        directory = tmp_path / name
        shutil.copytree(source / "traces", directory / "traces")
        with open(directory / "manifest.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(row for row in rows if keep(row))
        directories[name] = directory
    return directories["train"], directories["test"]


def test_test_on_trains_on_one_collection_and_tests_on_another(tmp_path, capsys):
    train, test = split_collection(tmp_path)
    predictions, document = tmp_path / "predictions.csv", tmp_path / "result.json"
    assert main(["evaluate", str(train), "--test-on", str(test), "--models", "lightgbm,hybrid,trace-time",
                 *QUICK, "--predictions-csv", str(predictions), "--json-out", str(document)]) == 0
    printed = capsys.readouterr().out
    assert "trained on one collection, tested on another" in printed and "80% prediction interval" in printed
    result = json.loads(document.read_text())
    assert result["split"] == "test-on" and result["test_sizes"] == [4]
    with open(predictions) as handle:
        tested = list(csv.DictReader(handle))
    assert {row["family"] for row in tested} == {"cnn"}
    assert result["models"]["lightgbm"]["unseen_share"] > 0  # the convolutions were never trained on
    assert result["models"]["hybrid"]["step_ms"]["mre"] != result["models"]["lightgbm"]["step_ms"]["mre"]


def test_test_on_refuses_a_test_set_that_shares_configurations_with_training(tmp_path, capsys):
    train, _ = split_collection(tmp_path)
    assert main(["evaluate", str(train), "--test-on", str(train), "--models", "trace-time"]) == 2
    assert "shares 8 configurations" in capsys.readouterr().err
