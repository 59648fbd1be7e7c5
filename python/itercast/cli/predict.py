"""itercast predict: a trained model's iteration-time prediction for a trace."""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("predict", help="predict the iteration time of the job in a trace")
    parser.add_argument("model", help="model file written by itercast train")
    parser.add_argument("trace", help="trace file (.json, .json.gz, or a .tmp being written)")
    parser.add_argument("--hardware", help="target hardware key (needed when the model holds several)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.predict import Predictor
    from itercast.trace import trace_path

    prediction = Predictor.load(args.model).predict(trace_path(args.trace), args.hardware)
    for warning in prediction.warnings:
        print(f"itercast predict: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(prediction.to_dict()))
        return 0
    print(f"{args.trace}: {prediction.predicted_ms:.3f} ms per iteration on {prediction.hardware}"
          f" ({100 * prediction.unseen_fraction:.1f}% of ops of a type unseen in training)")
    for it in prediction.iterations:
        measured = f"{it.measured_ms:10.3f}" if it.measured_ms is not None else f"{'-':>10}"
        print(f"  {it.name:24} predicted {it.predicted_ms:10.3f} ms   measured (profiled) {measured} ms")
    return 0
