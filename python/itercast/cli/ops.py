"""itercast ops: the operator timeline of a trace, per iteration."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ops", help="iterations, op sequence and kernel linking of a trace")
    parser.add_argument("trace", help="trace file (.json, .json.gz, or a .tmp being written)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def summarise(path: str) -> dict:
    from itercast.timeline import read_timeline
    from itercast.trace import trace_path

    timeline = read_timeline(trace_path(path))
    return {
        "path": str(path),
        "iterations": [{"name": it.name, "start_ns": it.start_ns, "dur_ns": it.dur_ns,
                        "gpu_busy_ns": it.gpu_busy_ns, "ops": it.ops.stop - it.ops.start,
                        "kernels": it.kernels, "kernels_linked": it.kernels_linked,
                        "head_ns": it.head_ns, "tail_ns": it.tail_ns,
                        "device_timeline": it.device_timeline}
                       for it in timeline.iterations],
        "ops_total": int(len(timeline.ops["name"])),
        "kernels_total": int(timeline.kernels_total),
        "kernels_linked": int(timeline.kernels_linked),
        "kernels_unlaunched": int(timeline.kernels_unlaunched),
        "hardware": timeline.hardware().name,
    }


def run(args) -> int:
    summary = summarise(args.trace)
    if args.json:
        print(json.dumps(summary))
        return 0
    launched = summary["kernels_total"] - summary["kernels_unlaunched"]
    print(summary["path"])
    print(f"  hardware: {summary['hardware']}; {summary['ops_total']:,} ops; kernels linked to an op: "
          f"{summary['kernels_linked']:,} of {summary['kernels_total']:,}"
          f" ({summary['kernels_unlaunched']:,} launched before the trace began; "
          f"{100 * summary['kernels_linked'] / launched if launched else 100:.1f}% of the rest)")
    print(f"  {'iteration':24} {'ms':>10} {'gpu busy ms':>12} {'ops':>7} {'kernels':>8} {'linked':>8}")
    for it in summary["iterations"]:
        print(f"  {it['name']:24} {it['dur_ns'] / 1e6:10.3f} {it['gpu_busy_ns'] / 1e6:12.3f} "
              f"{it['ops']:7,} {it['kernels']:8,} {it['kernels_linked']:8,}")
    return 0
