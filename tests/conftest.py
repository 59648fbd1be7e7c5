import pytest

from shared_data import CORPUS_ABSENT, corpus_dir


@pytest.fixture(scope="session")
def shared():
    """The external corpus (shared/); a test that takes it skips when there is none."""
    root = corpus_dir()
    if root is None:
        pytest.skip(CORPUS_ABSENT)
    return root


@pytest.fixture(scope="session")
def tiny_collection():
    """A labelled collection directory (manifest.csv + traces) of six tiny models, made once per run."""
    pytest.importorskip("torch")
    from tiny_collection import tiny_collection as make_once

    return make_once()
