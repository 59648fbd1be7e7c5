import pytest

from shared_data import shared_dir


@pytest.fixture(scope="session")
def shared():
    return shared_dir()


@pytest.fixture(scope="session")
def tiny_collection(tmp_path_factory):
    """A collection directory (manifest.csv + traces) of a few small models, made once per run."""
    pytest.importorskip("torch")
    from tiny_collection import make_collection

    return make_collection(tmp_path_factory.mktemp("tiny-collection"))
