"""File -> events -> op timeline -> windows, each stage timed beside the scanner in one run,
and the per-event cost of the live (streaming) window path.

    python3 -m pytest benchmarks/bench_pipeline.py --benchmark-enable --benchmark-timer time.process_time

Goals: the timeline within 1.5x of the scanner's time; file -> windows >= 1 GB/s.
"""

from conftest import record_throughput
from itercast import _native
from itercast.features import WindowCollector
from itercast.trace import iter_chunks

ROUNDS = 3


def scan(data: bytes) -> int:
    scanner = _native.Scanner(len(data))
    scanner.feed(data)
    scanner.finish()
    return len(scanner.take_events()["ts_ns"])


def timeline(data: bytes, width: int = 0) -> int:
    native = _native.Timeline(width=width, stride=3)
    native.feed(data)
    native.finish()
    native.features()
    return len(native.take_windows()["y_sum"]) if width else len(native.ops()["name"])


def live_windows(data: bytes) -> int:
    """The streaming path as a live consumer runs it: 64 KiB chunks as they would arrive."""
    stream = WindowCollector()
    for chunk in iter_chunks(data, 1 << 16):
        stream.feed(chunk)
    return len(stream.close())


def run(benchmark, trace_file, tool, data, function, *args):
    benchmark.group = trace_file.name
    result = benchmark.pedantic(function, args=(data, *args), rounds=ROUNDS, iterations=1, warmup_rounds=0)
    record_throughput(benchmark, trace_file, tool, len(data))
    return result


def test_scanner_alone(benchmark, trace_file, trace_bytes):
    assert run(benchmark, trace_file, "itercast", trace_bytes, scan) > 0


def test_op_timeline(benchmark, trace_file, trace_bytes):
    assert run(benchmark, trace_file, "timeline", trace_bytes, timeline) >= 0


def test_windows(benchmark, trace_file, trace_bytes):
    assert run(benchmark, trace_file, "windows", trace_bytes, timeline, 12) >= 0


def test_live_window_stream(benchmark, trace_file, trace_bytes):
    windows = run(benchmark, trace_file, "live windows (64 KiB)", trace_bytes, live_windows)
    if benchmark.stats is not None:
        events = scan(trace_bytes)
        benchmark.extra_info["ns_per_event"] = round(benchmark.stats.stats.min / events * 1e9, 1)
    assert windows >= 0
