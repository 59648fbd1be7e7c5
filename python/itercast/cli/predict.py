"""itercast predict: a trained model's iteration-time prediction for a trace."""

from __future__ import annotations

import json
import sys

from itercast.predict.hybrid import MODES


def register(subparsers) -> None:
    parser = subparsers.add_parser("predict", help="predict the iteration time of the job in a trace")
    parser.add_argument("model", help="model file written by itercast train")
    parser.add_argument("trace", help="trace file (.json, .json.gz, or a .tmp being written)")
    parser.add_argument("--hardware", help="target hardware key (needed when the model holds several); for a "
                                           "trace that does not name its hardware (a CPU trace), also says that "
                                           "it ran on this target, which the hybrid pricing needs")
    parser.add_argument("--mode", choices=MODES, default="auto",
                        help="auto (default): hybrid when the trace ran on the target, else structure; hybrid: "
                             "the ops the model has not seen priced from their measured times in the trace, the "
                             "rest anchored on the trace's times; structure: from op types, shapes and order "
                             "alone (for a trace from other hardware)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.predict import Predictor
    from itercast.trace import trace_path

    predictor = Predictor.load(args.model)
    trace_hardware = predictor.model_for(args.hardware).hardware if args.hardware else None
    prediction = predictor.predict(trace_path(args.trace), args.hardware, args.mode, trace_hardware)
    for warning in prediction.warnings:
        print(f"itercast predict: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(prediction.to_dict()))
        return 0
    interval = (f" (80% interval {prediction.interval_ms[0]:.3f}-{prediction.interval_ms[1]:.3f} ms)"
                if prediction.interval_ms else "")
    print(f"{args.trace}: {prediction.predicted_ms:.3f} ms per iteration on {prediction.hardware}{interval}")
    print(f"  priced by {prediction.mode}: {prediction.mode_reason}")
    print(f"  {prediction.measured_time_fraction:.1%} of the op time from the trace's measured times; "
          f"{prediction.unseen_time_fraction:.1%} on ops the model has not seen "
          f"({prediction.unseen_fraction:.1%} of ops of a type unseen in training)")
    for it in prediction.iterations:
        measured = f"{it.measured_ms:10.3f}" if it.measured_ms is not None else f"{'-':>10}"
        print(f"  {it.name:24} predicted {it.predicted_ms:10.3f} ms   measured (profiled) {measured} ms")
    return 0
