"""Trace scanning throughput: itercast against json.loads, orjson.loads and
HTA's own loader, on the largest shared traces, in one run.

    python3 -m pytest benchmarks/bench_scan.py --benchmark-enable                # wall time
    python3 -m pytest benchmarks/bench_scan.py --benchmark-enable \\
        --benchmark-timer time.process_time                                      # CPU time

Without --benchmark-enable each benchmark runs once on a small trace (smoke test).
HTA (holistictraceanalysis) is skipped where it is not installed.
"""

import itertools
import json
import re

import pytest

from conftest import record_throughput
from itercast.trace import TraceStream, iter_chunks, read_trace

orjson = pytest.importorskip("orjson")

ROUNDS = 3
SLOW_ROUNDS = 2  # json.loads and HTA take seconds per round on the large traces


def run(benchmark, trace_file, tool, nbytes, function, *args, rounds=ROUNDS):
    benchmark.group = trace_file.name
    result = benchmark.pedantic(function, args=args, rounds=rounds, iterations=1, warmup_rounds=0)
    record_throughput(benchmark, trace_file, tool, nbytes)
    return result


def stream_and_drop(data: bytes) -> int:
    """The bounded-memory path: feed chunks, drop each batch of events."""
    stream = TraceStream()
    for chunk in iter_chunks(data):
        stream.feed(chunk)
    stream.close()
    return stream.events


def test_itercast(benchmark, trace_file, trace_bytes):
    trace = run(benchmark, trace_file, "itercast", len(trace_bytes), read_trace, trace_bytes)
    assert len(trace) > 0


def test_itercast_stream_dropping_batches(benchmark, trace_file, trace_bytes):
    events = run(benchmark, trace_file, "itercast stream", len(trace_bytes), stream_and_drop, trace_bytes)
    assert events > 0


def with_a_key_per_event(data: bytes) -> bytes:
    """The trace with a member of its own ("k<n>": 0) first in each event's args,
    so that no event shares its layout with another: what the scanner's learned
    layouts cost where they never match."""
    counter = itertools.count()
    return re.sub(rb'"args": \{', lambda _: b'"args": {"k%d": 0, ' % next(counter), data)


@pytest.fixture(scope="session")
def ever_new_shapes(trace_bytes) -> bytes:
    return with_a_key_per_event(trace_bytes)


def test_itercast_events_of_ever_new_shapes(benchmark, trace_file, ever_new_shapes):
    trace = run(benchmark, trace_file, "itercast, new shapes", len(ever_new_shapes), read_trace, ever_new_shapes)
    assert len(trace) > 0


def test_itercast_gz_end_to_end(benchmark, trace_file, trace_bytes):
    """From the .gz path: bounded by zlib's inflate, reported separately."""
    trace = run(benchmark, trace_file, "itercast .gz e2e", len(trace_bytes), read_trace, trace_file)
    assert len(trace) > 0


def test_json_loads(benchmark, trace_file, trace_bytes):
    run(benchmark, trace_file, "json.loads", len(trace_bytes), json.loads, trace_bytes, rounds=SLOW_ROUNDS)


def test_orjson_loads(benchmark, trace_file, trace_bytes):
    run(benchmark, trace_file, "orjson.loads", len(trace_bytes), orjson.loads, trace_bytes)


def test_hta_loader(benchmark, trace_file, trace_bytes, plain_trace_file):
    """HTA's single-file loader (events into a pandas DataFrame), from the uncompressed file."""
    trace_parser = pytest.importorskip("hta.common.trace_parser")
    parser_config = pytest.importorskip("hta.configs.parser_config")
    run(benchmark, trace_file, "hta", len(trace_bytes), trace_parser.parse_trace_dataframe,
        str(plain_trace_file), parser_config.ParserConfig(), rounds=SLOW_ROUNDS)
