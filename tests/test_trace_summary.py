"""summarise_trace (what `itercast scan` prints, gathered while streaming) against read_trace."""

import pytest
from shared_data import trace_params

from itercast.trace import read_trace, summarise_trace


@pytest.mark.parametrize("source", trace_params(lambda row: int(row["raw_bytes"]) < 20_000_000))
def test_summary_matches_the_whole_trace(source):
    trace = read_trace(source)
    # Small chunks: step names and categories first seen in later batches, steps spread over batches.
    summary = summarise_trace(source, chunk_size=64 << 10)
    assert summary.nbytes == trace.nbytes and summary.events == len(trace)
    assert summary.counts == trace.count_by_category()
    assert summary.steps == trace.profiler_steps()
    assert summary.devices == trace.devices


def test_summary_of_a_trace_without_steps_or_events():
    summary = summarise_trace(b'{"traceEvents": [], "deviceProperties": [{"name": "X100"}]}')
    assert (summary.events, summary.counts, summary.steps, summary.devices) == (0, {}, [], ["X100"])
