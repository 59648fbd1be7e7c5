import pytest

from itercast.collect.measure import Protocol

# Fewer steps than a real collection: the tests check plumbing, not label quality.
QUICK = Protocol(warmup_steps=1, measured_steps=3, min_measured_seconds=0.0)


@pytest.fixture(scope="session")
def quick_protocol() -> Protocol:
    return QUICK
