"""Peak memory of streaming a large trace through TraceStream, batches dropped.

    PYTHONPATH=python python3 benchmarks/memory_stream.py [--gigabytes 1] [--source TRACE]

The trace is synthesised on the fly by repeating a block of real events taken
from a shared trace (only the 4 MB block goes to a temporary file). A child process measures
its peak RSS (VmHWM) over its own baseline taken after the imports and after
building the block, so the figure is what streaming itself costs.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # shared_data

DEFAULT_SOURCE = "hta/mtia_trace_single_rank/mtia_rank_0.json.gz"
BLOCK_EVENTS = 20_000  # about 4 MB of MTIA events


def status_kib(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def event_block(source: Path, count: int) -> bytes:
    """The raw text of the first `count` events of a real trace (no separators at the ends)."""
    from itercast.trace import iter_chunks, read_trace

    data = b"".join(bytes(chunk) for chunk in iter_chunks(source))
    offsets = read_trace(data).columns["offset"]
    end = offsets[count] if count < len(offsets) else data.rindex(b"]")
    return data[offsets[0]:end].rstrip().rstrip(b",")


def synthetic_trace(block: bytes, target_bytes: int):
    """Yields a Kineto document of about target_bytes: the block repeated in traceEvents."""
    yield b'{"schemaVersion": 1, "traceEvents": [\n'
    emitted = 0
    while True:
        yield block
        emitted += len(block)
        if emitted >= target_bytes:
            break
        yield b",\n"
    yield b'\n], "displayTimeUnit": "ms"}\n'


def measure(block_path: str, target_bytes: int) -> dict:
    """Runs in the child: streams the synthetic trace and reports memory and time."""
    from itercast.trace import TraceStream

    block = Path(block_path).read_bytes()
    baseline_kib = status_kib("VmRSS")
    stream = TraceStream("synthetic")
    fed = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for chunk in synthetic_trace(block, target_bytes):
        stream.feed(chunk)  # the batch is dropped at once
        fed += len(chunk)
    stream.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_kib = status_kib("VmHWM")
    return {"bytes": fed, "events": stream.events, "strings": len(stream.strings),
            "baseline_mib": baseline_kib / 1024, "peak_mib": peak_kib / 1024,
            "peak_over_baseline_mib": (peak_kib - baseline_kib) / 1024,
            "wall_s": wall, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--source", help="trace to take events from (default: the shared MTIA trace)")
    parser.add_argument("--child", nargs=2, metavar=("BLOCK", "BYTES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return

    from shared_data import shared_dir

    source = Path(args.source) if args.source else shared_dir() / "traces" / DEFAULT_SOURCE
    block_path = Path(f"/tmp/itercast-memory-stream-{os.getpid()}.block")
    block_path.write_bytes(event_block(source, BLOCK_EVENTS))
    try:
        target = int(args.gigabytes * 1e9)
        child = subprocess.run([sys.executable, __file__, "--child", str(block_path), str(target)],
                               check=True, capture_output=True, text=True)
    finally:
        block_path.unlink()
    result = json.loads(child.stdout)
    gb = result["bytes"] / 1e9
    print(f"streamed {gb:.3f} GB, {result['events']} events ({result['strings']} distinct strings) "
          f"from {BLOCK_EVENTS}-event blocks of {source.name}")
    print(f"peak RSS {result['peak_mib']:.1f} MiB, baseline {result['baseline_mib']:.1f} MiB, "
          f"peak over baseline {result['peak_over_baseline_mib']:.1f} MiB")
    print(f"cpu {result['cpu_s']:.2f} s ({gb / result['cpu_s']:.2f} GB/s), "
          f"wall {result['wall_s']:.2f} s ({gb / result['wall_s']:.2f} GB/s)")


if __name__ == "__main__":
    main()
