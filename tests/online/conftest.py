import pytest
import torch

from online_fixtures import train_model

from itercast.predict import Predictor


def pytest_configure(config):
    # torch warns once that a profiler clears its events each cycle: that is what the Monitor wants.
    config.addinivalue_line("filterwarnings", "ignore:Warning. Profiler clears events:UserWarning")


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    # Tiny models on 2 shared cores: more threads only add contention.
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("online-model")
    train_model(directory)
    return directory


@pytest.fixture(scope="session")
def model_path(model_dir):
    return model_dir / "model.itc"


@pytest.fixture(scope="session")
def predictor(model_path):
    return Predictor.load(model_path)


@pytest.fixture(scope="session")
def trace_file(model_dir):
    """A real profiler trace of a tiny training job (two ProfilerSteps)."""
    return model_dir / "traces" / "job1.pt.trace.json"
