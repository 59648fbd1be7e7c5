"""Deliberately broken models for the failure-handling tests (run in the worker process)."""

import time

from torch import nn

from itercast.collect.zoo import ModelSpec


class Failing(nn.Module):
    def __init__(self, features, num_classes, error):
        super().__init__()
        self.linear = nn.Linear(features, num_classes)
        self.error = error

    def forward(self, x):
        if self.error == "sleep":
            time.sleep(600)
        if self.error == "oom":
            raise MemoryError("simulated: can't allocate memory")
        raise RuntimeError("deliberate failure in forward")


def spec(name: str, error: str) -> ModelSpec:
    return ModelSpec(name, "mlp", "test", "tabular", "fault_models:Failing", (8,), {"error": error})


RAISING = spec("raising", "raise")
SLEEPING = spec("sleeping", "sleep")
EXHAUSTING = spec("exhausting", "oom")


class DenormalProbe(nn.Module):
    """Fails unless subnormal floats are flushed to zero while it trains."""

    def __init__(self, features, num_classes):
        super().__init__()
        self.linear = nn.Linear(features, num_classes)

    def forward(self, x):
        from itercast.collect.measure import flushes_denormals

        if not flushes_denormals():
            raise RuntimeError("subnormals are not flushed during the measurement")
        return self.linear(x)


DENORMAL_PROBE = ModelSpec("denormal_probe", "mlp", "test", "tabular", "fault_models:DenormalProbe", (8,))
