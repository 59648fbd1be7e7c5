import pytest

from shared_data import shared_dir


@pytest.fixture(scope="session")
def shared():
    return shared_dir()
