"""The Predictor scores its boosters natively: same predictions as lightgbm, and no lightgbm to load a model."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import itercast
from itercast import ItercastError
from itercast.predict import Dataset, Predictor
from itercast.predict.lgbm import LABELS, from_target, to_target
from itercast.predict.rows import all_pairs, central_pair_per_op, op_sums, rows_of

lightgbm = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def dataset(tiny_collection):
    return Dataset.from_manifest(tiny_collection)


@pytest.fixture(scope="module")
def samples():
    from tiny_collection import tiny_samples

    return tiny_samples()


@pytest.fixture(scope="module")
def predictor(samples):
    return Predictor(rounds=30).fit(samples)


@pytest.mark.parametrize("predict_rows", ["all", "central"])
def test_native_prediction_equals_lightgbm(predictor, samples, predict_rows):
    """What predict_op_time returned before it scored natively: lightgbm Boosters from the same text, which
    read the rows clipped to the linear leaves' bounds (the training range: it holds every threshold)."""
    model = next(iter(predictor.models.values())).window_model
    boosters = {label: lightgbm.Booster(model_str=model.boosters[label].model_text) for label in LABELS}
    rows = rows_of(samples, all_pairs if predict_rows == "all" else central_pair_per_op)
    prior = {"duration": to_target(model.roofline.predict_ns(rows.x), model.objective), "gap": 0.0}

    def read(label):
        bounds = model.boosters[label].linear_bounds
        return rows.x if bounds is None else np.clip(rows.x, *np.asarray(bounds, dtype=np.float32))

    assert model.boosters["duration"].linear_bounds is not None
    old = op_sums(rows, sum(from_target(boosters[label].predict(read(label)) + prior[label], model.objective)
                            for label in LABELS), len(samples))
    default = model.predict_rows
    model.predict_rows = predict_rows
    try:
        np.testing.assert_allclose(model.predict_op_time(samples), old, rtol=1e-9)
    finally:
        model.predict_rows = default


def test_loaded_model_predicts_without_lightgbm(predictor, dataset, tmp_path):
    path = tmp_path / "model.itc"
    predictor.save(path)
    trace = dataset.configs[0].trace_path
    script = (
        "import json, sys\n"
        "sys.modules['lightgbm'] = None  # importing it now fails\n"
        "from itercast.predict import Predictor\n"
        f"prediction = Predictor.load({str(path)!r}).predict({str(trace)!r})\n"
        "print(json.dumps({'ms': prediction.predicted_ms,\n"
        "                  'lightgbm': sys.modules.get('lightgbm', 'absent') is not None}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(itercast.__file__)),
                                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["lightgbm"] is False
    assert answer["ms"] == pytest.approx(predictor.predict(trace).predicted_ms, rel=1e-12)


def test_a_corrupt_booster_in_a_model_file_names_file_and_target(predictor, tmp_path):
    path = tmp_path / "model.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    key = next(iter(document["hardware"]))
    boosters = document["hardware"][key]["window_model"]["boosters"]
    boosters["gap"] = boosters["gap"].replace("leaf_value=", "leaf_value=x", 1)
    path.write_text(json.dumps(document))
    with pytest.raises(ItercastError, match=r"model.itc: target .*: gap: LightGBM model text, line \d+: leaf_value"):
        Predictor.load(path)


def test_central_rows_pick_each_op_once_nearest_its_window_middle(samples):
    for sample in samples:
        windows = sample.windows
        window, position = central_pair_per_op(windows)
        op = windows.index[window, 1] + position
        assert np.array_equal(np.sort(op), np.arange(sample.op_count))
        all_window, all_position = all_pairs(windows)
        all_op = windows.index[all_window, 1] + all_position
        off = np.abs(2 * all_position - (windows.index[all_window, 2] - 1))
        best = np.full(sample.op_count, np.iinfo(np.int64).max)
        np.minimum.at(best, all_op, off)
        chosen = np.abs(2 * position - (windows.index[window, 2] - 1))
        assert np.array_equal(chosen, best[op])


def test_central_rows_round_trip_through_the_model_file(samples, tmp_path):
    predictor = Predictor(rounds=10)
    predictor.fit(samples)
    model = next(iter(predictor.models.values())).window_model
    model.predict_rows = "central"
    predictor.save(tmp_path / "m.itc")
    loaded = next(iter(Predictor.load(tmp_path / "m.itc").models.values())).window_model
    assert loaded.predict_rows == "central"
    np.testing.assert_array_equal(loaded.predict_op_time(samples), model.predict_op_time(samples))


def test_a_malformed_roofline_in_a_model_file_names_file_and_target(predictor, tmp_path):
    path = tmp_path / "model.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    key = next(iter(document["hardware"]))
    document["hardware"][key]["window_model"]["roofline"] = [[1.0, 2.0, 3.0]]
    path.write_text(json.dumps(document))
    with pytest.raises(ItercastError, match=r"model.itc: target .*: roofline coefficients of shape"):
        Predictor.load(path)
