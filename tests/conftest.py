import pytest

from shared_data import shared_dir


@pytest.fixture(scope="session")
def shared():
    return shared_dir()


@pytest.fixture(scope="session")
def tiny_collection():
    """A labelled collection directory (manifest.csv + traces) of six tiny models, made once per run."""
    pytest.importorskip("torch")
    from tiny_collection import tiny_collection as make_once

    return make_once()
