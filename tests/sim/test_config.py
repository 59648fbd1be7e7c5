import dataclasses

import pytest

from itercast.sim import SimConfig, SimConfigError


def test_tiresias_queue_defaults():
    assert SimConfig().queue_thresholds_gpu_s == (3600,)
    assert SimConfig(queues=3).queue_thresholds_gpu_s == (3600, 7200)
    assert SimConfig(queues=1).queue_thresholds_gpu_s == ()


def test_settings_are_parsed_by_field_type():
    config = SimConfig().with_settings(["policy=tiresias", "queues=3", "queue_limits_gpu_s=60,600",
                                        "backfill=false", "lease_s=0", "estimate_seed=4"])
    assert (config.policy, config.queues, config.queue_limits_gpu_s, config.backfill, config.lease_s,
            config.estimate_seed) == ("tiresias", 3, (60.0, 600.0), False, 0.0, 4)


def test_every_field_can_be_set_from_a_string():
    defaults = SimConfig()
    for field in dataclasses.fields(SimConfig):
        value = getattr(defaults, field.name)
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        assert getattr(defaults.with_settings([f"{field.name}={text}"]), field.name) == value


@pytest.mark.parametrize("changes, message", [
    ({"policy": "lottery"}, "policy must be one of .*, not 'lottery'"),
    ({"placement": "random"}, "placement must be one of .*, not 'random'"),
    ({"estimate": "psychic"}, "estimate must be one of .*, not 'psychic'"),
    ({"restart_overhead_s": -1}, "restart_overhead_s must be >= 0"),
    ({"lease_s": -1}, "lease_s must be >= 0"),
    ({"queues": 0}, "queues must be >= 1"),
    ({"queues": 5}, "5 queues need 4 queue_limits_gpu_s, got 3"),
    ({"queue_limits_gpu_s": (7200, 3600)}, "queue_limits_gpu_s must be positive and strictly increasing"),
    ({"starvation_factor": -1}, "starvation_factor must be >= 0"),
    ({"estimate_error": 1.0}, r"estimate_error must be in \[0, 1\)"),
])
def test_invalid_values_are_rejected(changes, message):
    with pytest.raises(SimConfigError, match=message):
        SimConfig(**changes)
