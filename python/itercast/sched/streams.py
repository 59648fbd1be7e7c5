"""Independent random streams from one seed, one per named use.

Each stream is a child of ``numpy.random.SeedSequence(seed)`` (the same as
``SeedSequence(seed).spawn(len(STREAMS))[STREAMS.index(name)]``), so no stream
of one seed repeats a stream of another, as ``seed + k`` offsets would: with
them seed s's k-th stream is seed s+1's (k-1)-th.
"""

from __future__ import annotations

import numpy as np

# Append only: a stream's position is its identity, and reordering would change every seeded result.
STREAMS = (
    "configurations",  # the configuration each trace job runs
    "estimates",  # the synthetic accuracy levels' error factors
    "deadlines",  # the deadline slack of jobs without a deadline
    "sia models",  # the zoo model a Sia job draws from its family
    "futures",  # the tuner's sampled futures and duration draws
    "search",  # the tuner's TPE sampler, one child per search
)


def seed_sequence(seed: int, name: str, *index: int) -> np.random.SeedSequence:
    """The stream ``name`` of ``seed``; ``index`` picks a child of it (e.g. the k-th search)."""
    if name not in STREAMS:
        raise ValueError(f"unknown random stream {name!r} (known: {', '.join(STREAMS)})")
    return np.random.SeedSequence(seed, spawn_key=(STREAMS.index(name), *index))


def stream(seed: int, name: str, *index: int) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(seed, name, *index))


def stream_seed(seed: int, name: str, *index: int) -> int:
    """An integer seed for a library that takes one (Optuna's samplers), drawn from the stream."""
    return int(seed_sequence(seed, name, *index).generate_state(1)[0])
