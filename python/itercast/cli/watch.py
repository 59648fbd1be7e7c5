"""itercast watch: follow a trace directory and predict each iteration as its trace completes."""

from __future__ import annotations

import json
import sys

from itercast.cli import options
from itercast.predict.hybrid import MODES


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "watch", help="follow a directory the profiler writes traces to; one line per completed iteration")
    parser.add_argument("directory", help="where the traces appear (e.g. tensorboard_trace_handler's dir)")
    parser.add_argument("--model", required=True, action="append",
                        help="model file written by itercast train (repeat for several)")
    options.add_list_option(parser, "--hardware", metavar="KEY", help="target hardware keys (default: all)")
    parser.add_argument("--mode", choices=MODES, default="auto",
                        help="pricing, as itercast predict --mode (default auto: hybrid for a trace from the "
                             "target, which a CPU trace cannot tell without --trace-hardware)")
    parser.add_argument("--trace-hardware", metavar="KEY",
                        help="the hardware key the traces ran on, where a trace does not name it (a CPU trace)")
    parser.add_argument("--interval", type=float, default=0.5, metavar="SECONDS",
                        help="seconds between polls (default 0.5)")
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--once", action="store_true", help="predict the traces there now, then exit")
    stop.add_argument("--timeout", type=float, metavar="SECONDS", help="stop after this many seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object per iteration")
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.online.targets import load_targets
    from itercast.online.watch import TraceWatcher

    watcher = TraceWatcher(args.directory, load_targets(args.model, args.hardware, args.mode, args.trace_hardware))
    failures = 0

    def report(trace) -> None:
        nonlocal failures
        if trace.error is not None:
            failures += 1
            print(f"itercast watch: {trace.file}: {trace.error}", file=sys.stderr)
        for iteration in trace.iterations:
            print(json.dumps(iteration.to_dict()) if args.json else iteration.describe(), flush=True)

    try:
        watcher.run(report, args.interval, once=args.once, timeout_s=args.timeout)
    except KeyboardInterrupt:
        pass
    for name in watcher.in_progress:
        print(f"itercast watch: {name}: still being written, not predicted", file=sys.stderr)
    return 1 if failures else 0
