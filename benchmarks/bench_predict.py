"""Predictor costs: training on a collection, model load, prediction latency after featurisation.

    ITERCAST_DATASET=/path/to/collection python3 -m pytest benchmarks/bench_predict.py --benchmark-enable

Goals: training <= 60 s on the full CPU collection; load < 100 ms; < 1 ms per iteration.
Without ITERCAST_DATASET a tiny collection is made on the spot (a smoke run).

Model load is measured twice: ``Predictor.load`` (native) and the JSON document plus a
``lightgbm.Booster`` per booster text (the load before the native evaluator).
Latency is measured on the iteration whose op count is nearest 900, five ways in the same run:
the default (what ``HardwareModel.predict_samples`` does: one row per op, its most central
window, scored natively; linear leaves in the duration booster), the same with the portable
bit-set kernel instead of AVX-512, a model trained with constant leaves (``--constant-leaves``,
the faster, less accurate booster), every covering window averaged
(``predict_rows="all"``, ETS's combination and the default before), and the same boosters
through ``lightgbm.Booster.predict`` (the path before the native evaluator).
``extra_info`` holds the rows scored, how many of them are distinct (byte-identical rows could be
scored once) and the distinct ratio over every iteration of the collection.
"""

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from itercast.predict import Dataset, Predictor, featurise
from itercast import _native
from itercast.predict.lgbm import LABELS, PREDICT_ROWS, from_target
from itercast.predict.rows import all_pairs, op_sums, rows_of

lightgbm = pytest.importorskip("lightgbm")

TYPICAL_OPS = 900


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> Path:
    if os.environ.get("ITERCAST_DATASET"):
        return Path(os.environ["ITERCAST_DATASET"])
    from tiny_collection import write_collection

    return write_collection(tmp_path_factory.mktemp("collection"))


@pytest.fixture(scope="module")
def samples(collection):
    return featurise(Dataset.from_manifest(collection).configs)


@pytest.fixture(scope="module")
def model_file(samples, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.itc"
    Predictor().fit(samples).save(path)
    return path


@pytest.fixture(scope="module")
def model(model_file):
    return next(iter(Predictor.load(model_file).models.values()))


@pytest.fixture(scope="module")
def constant_leaves_model(samples, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "constant.itc"
    Predictor(linear_leaves=False).fit(samples).save(path)
    return next(iter(Predictor.load(path).models.values()))


@pytest.fixture(scope="module")
def one(samples):
    return min(samples, key=lambda s: abs(s.op_count - TYPICAL_OPS))


def test_training(benchmark, samples):
    benchmark.extra_info["configs"] = len(samples)
    benchmark.extra_info["ops"] = sum(s.op_count for s in samples)
    predictor = benchmark.pedantic(lambda: Predictor().fit(samples), rounds=1, iterations=1)
    assert predictor.hardware


def test_model_load(benchmark, model_file):
    benchmark.extra_info["file_bytes"] = model_file.stat().st_size
    predictor = benchmark(Predictor.load, model_file)
    assert predictor.hardware


def test_model_load_lightgbm(benchmark, model_file):
    """The load before the native evaluator: the JSON document, then a lightgbm Booster per model text."""
    import json

    def load():
        document = json.loads(model_file.read_text())
        return [lightgbm.Booster(model_str=text) for entry in document["hardware"].values()
                for text in entry["window_model"]["boosters"].values()]

    assert benchmark(load)


def test_prediction_latency_per_iteration(benchmark, model, one, samples):
    pairs = PREDICT_ROWS[model.window_model.predict_rows]
    benchmark.extra_info["predict_rows"] = model.window_model.predict_rows
    benchmark.extra_info["kernel"] = _native.forest_kernel()
    rows = rows_of([one], pairs)
    benchmark.extra_info["ops_in_iteration"] = one.op_count
    benchmark.extra_info["rows"] = len(rows.x)
    benchmark.extra_info["distinct_rows"] = distinct_rows(rows.x)
    total = distinct = 0
    for sample in samples:
        x = rows_of([sample], pairs).x
        total, distinct = total + len(x), distinct + distinct_rows(x)
    benchmark.extra_info["collection_rows_per_distinct_row"] = round(total / distinct, 4)
    profiled, unprofiled = benchmark(predict_fresh, model, one)
    assert unprofiled[0] > 0


@pytest.mark.parametrize("mode", ["structure", "hybrid"])
def test_priced_latency_per_iteration(benchmark, model, one, mode):
    """What Predictor.predict runs: HardwareModel.price, per-op predictions and the unseen and measured
    parts (the hybrid's measured estimate too), against test_prediction_latency_per_iteration's sums."""
    benchmark.extra_info["mode"] = mode
    priced = benchmark(lambda: model.price([replace(one)], mode))
    assert priced.unprofiled_ms[0] > 0


def distinct_rows(x: np.ndarray) -> int:
    """Rows of x distinct by their bytes (-0.0 and 0.0 apart, NaNs alike)."""
    return len(np.unique(np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()))


def predict_fresh(model, sample):
    """Predicts a fresh copy of the sample: what it caches (its iteration totals) is computed in every
    call, as for each new iteration of a running job."""
    return model.predict_samples([replace(sample)])


def test_prediction_latency_per_iteration_lightgbm(benchmark, model, one):
    """The path before the native evaluator: lightgbm Boosters read from the same model text."""
    window_model = model.window_model
    boosters = {label: lightgbm.Booster(model_str=window_model.boosters[label].model_text) for label in LABELS}

    def predict():
        rows = rows_of([replace(one)], PREDICT_ROWS[window_model.predict_rows])
        total = sum(from_target(boosters[label].predict(rows.x) + window_model.prior_score(label, rows.x),
                                window_model.objective) for label in LABELS)
        return op_sums(rows, total, 1)

    benchmark.extra_info["ops_in_iteration"] = one.op_count
    old = benchmark(predict)
    np.testing.assert_allclose(window_model.predict_op_time([one]), old, rtol=1e-9)


def test_prediction_latency_per_iteration_constant_leaves(benchmark, constant_leaves_model, one):
    """A model trained with constant leaves in its duration booster (itercast train --constant-leaves)."""
    assert not constant_leaves_model.window_model.boosters["duration"]._forest.has_linear
    profiled, unprofiled = benchmark(predict_fresh, constant_leaves_model, one)
    assert unprofiled[0] > 0


def test_prediction_latency_per_iteration_portable_kernel(benchmark, model, one):
    """The default rows, scored by the portable bit-set kernel (CPUs without AVX-512)."""
    _native.forest_kernel("portable")
    try:
        profiled, unprofiled = benchmark(predict_fresh, model, one)
    finally:
        _native.forest_kernel("auto")
    assert unprofiled[0] > 0


def test_prediction_latency_per_iteration_all_windows(benchmark, model, one):
    """Every covering window of each op, averaged (ETS's combination): 4x the rows."""
    window_model = model.window_model
    benchmark.extra_info["ops_in_iteration"] = one.op_count
    benchmark.extra_info["rows"] = len(rows_of([one], all_pairs).x)
    default = window_model.predict_rows
    window_model.predict_rows = "all"
    try:
        profiled, unprofiled = benchmark(predict_fresh, model, one)
    finally:
        window_model.predict_rows = default
    assert unprofiled[0] > 0
