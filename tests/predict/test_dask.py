"""Scale-out: featurisation and LightGBM training on a local dask.distributed cluster."""

import numpy as np
import pytest

from itercast.predict import Dataset, Predictor, featurise

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def test_featurising_on_dask_matches_in_process(client, tiny_collection):
    configs = Dataset.from_manifest(tiny_collection).configs[:4]
    local = featurise(configs)
    remote = featurise(configs, client=client)
    assert [s.config.config_id for s in remote] == [s.config.config_id for s in local]
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a.windows.x, b.windows.x)
        assert a.op_count == b.op_count and a.profiled_ns == b.profiled_ns


@pytest.mark.slow
def test_training_on_dask_gives_a_working_predictor(client, tiny_collection, tmp_path, recwarn):
    dataset = Dataset.from_manifest(tiny_collection)
    predictor = Predictor(rounds=10).fit(dataset, client=client)
    assert not [str(w.message) for w in recwarn if "will be ignored" in str(w.message)]  # no warning the user can't act on
    boosters = predictor.models[predictor.hardware[0]].window_model.boosters
    assert boosters["duration"]._forest.has_linear  # the booster parameters reach the Dask workers
    predictor.save(tmp_path / "m.itc")
    prediction = Predictor.load(tmp_path / "m.itc").predict(dataset.configs[0].trace_path)
    assert prediction.predicted_ms > 0 and np.isfinite(prediction.predicted_ms)
