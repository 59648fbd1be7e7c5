"""itercast train: fit the iteration-time predictor on a collected dataset."""

from __future__ import annotations

import json
import time

from itercast.cli import options


def register(subparsers) -> None:
    from itercast.predict.hardware_model import CALIBRATION_FOLDS

    parser = subparsers.add_parser("train", help="train a predictor on a collection (one model per hardware)")
    options.add_dataset_option(parser, "collection directory (or its manifest.csv)", legacy_positional=True)
    parser.add_argument("-o", "--output", required=True, help="model file to write (.itc)")
    parser.add_argument("--width", type=int, default=12, help="window width (default 12)")
    parser.add_argument("--stride", type=int, default=3, help="window stride (default 3)")
    parser.add_argument("--objective", choices=("log", "l2"), default="log",
                        help="per-op target: log-scaled (default) or raw microseconds")
    parser.add_argument("--rounds", type=int, default=150,
                        help="boosting rounds (default 150): the duration booster takes four fifths of them "
                             "at 1.25x the learning rate (with linear leaves), the gap booster half at twice")
    parser.add_argument("--predict-rows", choices=("all", "central"), default="central",
                        help="score each op only in its most central window (default), or in every window "
                             "covering it, averaged, as ETS (4x more rows to score)")
    parser.add_argument("--constant-leaves", action="store_true",
                        help="constant leaves in the duration booster instead of linear ones: less "
                             "accurate, ~15%% faster to predict (default: linear)")
    parser.add_argument("--calibration-folds", type=int, default=CALIBRATION_FOLDS, metavar="K",
                        help="calibrate the un-profiled prediction on held-out predictions of the training "
                             f"architectures, in K groups (default {CALIBRATION_FOLDS}: K more trainings); 0: none")
    parser.add_argument("--no-machine-speed", action="store_true",
                        help="train on labels and trace times as measured, not divided by the machine's speed "
                             "then (fitted where the collection timed its reference workload and label passes)")
    parser.add_argument("--dask", metavar="ADDRESS",
                        help="featurise and train on this dask.distributed scheduler")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.collect.runner import dask_client
    from itercast.predict import Dataset, Predictor

    dataset = Dataset.from_manifest(args.dataset, machine_speed=not args.no_machine_speed)
    client = dask_client(args.dask) if args.dask else None
    start = time.perf_counter()
    try:
        predictor = Predictor(args.width, args.stride, args.objective, args.rounds,
                              predict_rows=args.predict_rows, linear_leaves=not args.constant_leaves,
                              calibration_folds=args.calibration_folds or None).fit(dataset, client=client)
    finally:
        if client is not None:
            client.close()
    predictor.save(args.output)
    summary = {"model": args.output, "seconds": round(time.perf_counter() - start, 2),
               "configs": len(dataset),
               "hardware": {key: {**m.summary, "reconciliation": vars(m.reconciliation),
                                  "calibration": m.calibration.coefficients}
                            for key, m in predictor.models.items()}}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"trained on {summary['configs']} configurations in {summary['seconds']:.1f} s -> {args.output}")
        for key, info in summary["hardware"].items():
            rec = info["reconciliation"]
            print(f"  {key}: {info['configs']} configs, {info['models']} architectures; "
                  f"unprofiled = {rec['scale']:.3f} x op durations + {rec['gap_scale']:.3f} x gaps and head/tail "
                  f"{rec['per_op_ms'] * 1000:+.2f} us/op")
            if info["calibration_folds"]:
                a, b = info["calibration"]
                print(f"    calibrated on held-out predictions ({info['calibration_folds']} groups of architectures): "
                      f"x exp({a:+.4f} {b:+.4f} log ops); the hybrid weighs the trace's measured times "
                      f"{info['anchor_weight']:.2f} {info['anchor_slope']:+.2f} x the profiler's share")
            left_out = info["unexplained_traces"]
            if left_out:
                print(f"    not learnt from: {len(left_out)} traces whose profiled runs the reconciliation "
                      f"misses by over {info['max_unexplained']:.0%}: {', '.join(left_out)}")
    return 0
