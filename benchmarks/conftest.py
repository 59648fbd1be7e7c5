"""Shared setup for the benchmarks: which traces to time, their bytes in memory,
and a closing table of GB/s and ratios for the whole run.

With benchmarks disabled (the repo's default, a smoke run) only the smallest
real Kineto trace is used, so each benchmark runs once and quickly.
"""

import gzip
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # shared_data and tiny_collection live in tests/
from shared_data import manifest_rows, shared_dir  # noqa: E402

LARGEST_COUNT = 4
# Smoke runs need a real trace with some events, not an edge-case fixture.
SMOKE_MIN_EVENTS = 1000
# Tools that the summary compares itercast with.
PEERS = ("json.loads", "orjson.loads", "hta")

# (trace name, tool) -> GB/s, filled by record_throughput() and printed at the end.
_throughput: dict[tuple[str, str], float] = {}


def benchmarks_enabled(config) -> bool:
    return not config.getoption("benchmark_disable") or config.getoption("benchmark_enable")


def chosen_traces(config) -> list[Path]:
    rows = [row for row in manifest_rows() if row["events"] and int(row["events"]) >= SMOKE_MIN_EVENTS]
    rows.sort(key=lambda row: int(row["raw_bytes"]), reverse=True)
    chosen = rows[:LARGEST_COUNT] if benchmarks_enabled(config) else rows[-1:]
    return [shared_dir() / "traces" / row["path"] for row in chosen]


def pytest_generate_tests(metafunc):
    if "trace_file" in metafunc.fixturenames:
        traces = chosen_traces(metafunc.config)
        metafunc.parametrize("trace_file", traces, ids=[path.name.split(".")[0][:40] for path in traces],
                             scope="session")


@pytest.fixture(scope="session")
def trace_bytes(trace_file) -> bytes:
    """The uncompressed trace, in memory (inflating is not part of what is timed)."""
    data = trace_file.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@pytest.fixture(scope="session")
def plain_trace_file(trace_file, trace_bytes, tmp_path_factory) -> Path:
    """The uncompressed trace as a temporary file, for loaders that take a path."""
    path = tmp_path_factory.mktemp("traces") / trace_file.name.removesuffix(".gz")
    path.write_bytes(trace_bytes)
    return path


def record_throughput(benchmark, trace_file: Path, tool: str, nbytes: int) -> None:
    """Notes GB/s of uncompressed bytes from the fastest round (when timing is on)."""
    benchmark.extra_info["uncompressed_bytes"] = nbytes
    if benchmark.stats is None:
        return
    seconds = benchmark.stats.stats.min
    benchmark.extra_info["GB/s"] = round(nbytes / seconds / 1e9, 4)
    _throughput[(trace_file.name, tool)] = nbytes / seconds / 1e9


def pytest_terminal_summary(terminalreporter):
    if not _throughput:
        return
    by_trace = defaultdict(dict)
    for (trace, tool), gbps in _throughput.items():
        by_trace[trace][tool] = gbps
    timer = terminalreporter.config.getoption("benchmark_timer", None)
    write = terminalreporter.write_line
    write("")
    write(f"GB/s of uncompressed trace bytes (fastest round; timer: {timer or 'default'}); x = itercast / peer")
    for trace, tools in by_trace.items():
        write(f"  {trace}")
        reference = tools.get("itercast")
        for tool, gbps in tools.items():
            ratio = f"  itercast is {reference / gbps:6.1f}x" if reference and tool in PEERS else ""
            write(f"    {tool:<22} {gbps:8.3f} GB/s{ratio}")

