"""Random streams derived from a seed: independent per use and per seed."""

import numpy as np
import pytest

from itercast.sched.streams import STREAMS, seed_sequence, stream, stream_seed


def test_a_named_stream_is_the_seed_sequences_spawned_child():
    children = np.random.SeedSequence(7).spawn(len(STREAMS))
    for position, name in enumerate(STREAMS):
        expected = np.random.default_rng(children[position]).random(5)
        assert np.array_equal(stream(7, name).random(5), expected)
    grandchild = children[STREAMS.index("search")].spawn(3)[2]
    assert seed_sequence(7, "search", 2).generate_state(4).tolist() == grandchild.generate_state(4).tolist()


def test_no_stream_of_a_seed_is_a_stream_of_the_next_seed():
    draws = {(seed, name): tuple(stream(seed, name).random(4)) for seed in range(5) for name in STREAMS}
    assert len(set(draws.values())) == len(draws)
    searches = {stream_seed(seed, "search", k) for seed in range(5) for k in range(5)}
    assert len(searches) == 25


def test_an_unknown_stream_is_named():
    with pytest.raises(ValueError, match="unknown random stream 'deadline'"):
        stream(0, "deadline")
