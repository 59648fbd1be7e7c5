"""itercast scan: read a trace and summarise what is in it."""

from __future__ import annotations

import json
import time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "scan", help="scan a Kineto trace: throughput, event counts, iterations, devices")
    parser.add_argument("trace", help="trace file (.json, .json.gz, or a .tmp being written)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def summarise(path: str) -> dict:
    from itercast.trace import summarise_trace, trace_path

    start = time.perf_counter()
    trace = summarise_trace(trace_path(path))
    seconds = time.perf_counter() - start
    by_category: dict[str, int] = {}
    by_phase_category = []
    for (ph, cat), count in sorted(trace.counts.items()):
        by_category[cat] = by_category.get(cat, 0) + count
        by_phase_category.append({"ph": ph, "cat": cat, "count": count})
    return {
        "path": str(path),
        "bytes": trace.nbytes,
        "events": trace.events,
        "seconds": seconds,
        "gb_per_s": trace.nbytes / seconds / 1e9 if seconds > 0 else None,
        "by_category": by_category,
        "by_phase_category": by_phase_category,
        "iterations": [{"name": s.name, "ts_ns": s.ts_ns, "dur_ns": s.dur_ns} for s in trace.steps],
        "devices": trace.devices,
    }


def run(args) -> int:
    summary = summarise(args.trace)
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{summary['path']}")
    print(f"  {summary['bytes']:,} bytes, {summary['events']:,} events in {summary['seconds']:.3f} s"
          f" ({summary['gb_per_s'] or 0:.2f} GB/s)")
    print("  events per (ph, cat):")
    for row in summary["by_phase_category"]:
        print(f"    {row['ph'] or '-':2} {row['cat'] or '(none)':28} {row['count']:>10,}")
    steps = summary["iterations"]
    print(f"  iterations: {len(steps)}")
    for step in steps:
        print(f"    {step['name']:24} {step['dur_ns'] / 1e6:12.3f} ms")
    print(f"  devices: {', '.join(summary['devices']) or '(none recorded)'}")
    return 0
