"""Predictor costs: training on a collection, model load, prediction latency after featurisation.

    ITERCAST_DATASET=/path/to/collection python3 -m pytest benchmarks/bench_predict.py --benchmark-enable

Goals: training <= 60 s on the full CPU collection; load < 100 ms; < 1 ms per iteration.
Without ITERCAST_DATASET a tiny collection is made on the spot (a smoke run).
"""

import os
from pathlib import Path

import pytest

from itercast.predict import Dataset, Predictor, featurise

pytest.importorskip("lightgbm")


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


def test_training(benchmark, samples):
    benchmark.extra_info["configs"] = len(samples)
    benchmark.extra_info["ops"] = sum(s.op_count for s in samples)
    predictor = benchmark.pedantic(lambda: Predictor().fit(samples), rounds=1, iterations=1)
    assert predictor.hardware


def test_model_load(benchmark, model_file):
    benchmark.extra_info["file_bytes"] = model_file.stat().st_size
    predictor = benchmark(Predictor.load, model_file)
    assert predictor.hardware


def test_prediction_latency_per_iteration(benchmark, samples, model_file):
    model = next(iter(Predictor.load(model_file).models.values()))
    one = samples[len(samples) // 2]
    benchmark.extra_info["ops_in_iteration"] = one.op_count
    profiled, unprofiled = benchmark(model.predict_samples, [one])
    assert unprofiled[0] > 0
