"""itercast evaluate: train and test every model on the same split, print one table."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from itercast.cli import options
from itercast.errors import ItercastError


def register(subparsers) -> None:
    from itercast.predict.evaluate import DIAGNOSTICS, MODEL_NAMES, VARIANTS, Settings

    defaults = Settings()
    parser = subparsers.add_parser(
        "evaluate", help="compare the predictor with the ETS reference and baselines on a labelled collection")
    options.add_dataset_option(parser, "collection directory (or its manifest.csv)", legacy_positional=True)
    parser.add_argument("--split", choices=("arch", "line", "config", "op"), default=defaults.split,
                        help="keep whole architectures (default), whole architecture lines (a model with its "
                             "size variants, the manifest's arch column), whole configurations, or op types "
                             "(op: each fold holds out rare op types, tests the lines that run them and trains "
                             "on no configuration that runs them) out of training")
    parser.add_argument("--test-on", default=None, metavar="DATASET",
                        help="train on the whole dataset and test on this other collection (e.g. "
                             "`itercast collect --suite blind`): architectures and op types the training never "
                             "saw; --split and --folds are then unused")
    parser.add_argument("--folds", type=int, default=defaults.folds,
                        help="k folds over the groups; 1 (default) is a single 80/20 holdout")
    options.add_list_option(parser, "--models", default=MODEL_NAMES, metavar="NAME[,NAME]",
                            choices=MODEL_NAMES + DIAGNOSTICS + VARIANTS,
                            help=f"from {','.join(MODEL_NAMES)} (default: all); "
                             f"diagnostic: {','.join(DIAGNOSTICS)} (the test traces' measured op time); "
                             f"variants: {','.join(VARIANTS)} (each op from every window covering it, averaged "
                             f"as ETS; from its most central window, as lightgbm does)")
    parser.add_argument("--rounds", type=int, default=defaults.rounds, help="LightGBM boosting rounds")
    parser.add_argument("--ets-seconds", type=float, default=defaults.ets_seconds, metavar="SECONDS",
                        help="wall-clock training budget of the ETS reference per fold, in seconds")
    parser.add_argument("--ets-threads", type=int, default=None, help="torch threads for the ETS reference")
    parser.add_argument("--limit-configs", type=int, default=None, metavar="N",
                        help="use a seeded random subset of N configurations")
    parser.add_argument("--calibration-folds", type=int, default=defaults.calibration_folds, metavar="K",
                        help="calibrate lightgbm and its variants as the Predictor does, on held-out predictions "
                             f"of the training architectures in K groups (default {defaults.calibration_folds}); "
                             "0: uncalibrated")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--cache", default=None, metavar="FILE",
                        help="pickle of featurised samples: read when it covers the dataset, else written")
    parser.add_argument("--plot", default=None, metavar="PNG", help="write predicted vs measured")
    parser.add_argument("--families-csv", default=None, metavar="CSV", help="write per-family MRE")
    predictions = parser.add_argument(
        "--predictions", default=None, metavar="CSV",
        help="write every tested configuration's measured step time and each model's held-out prediction "
             "(with --folds K, every configuration is tested once; read by itercast experiment "
             "sched-prediction --predictions)")
    options.add_deprecated_alias(parser, "--predictions-csv", predictions)
    parser.add_argument("--also-on", default=None, metavar="DATASET",
                        help="also print the tables scored only on this collection's configurations (e.g. the "
                             "collection before configurations were added), from the same trained models")
    parser.add_argument("--no-machine-speed", action="store_true",
                        help="take labels and trace times as measured, not divided by the machine's speed then "
                             "(fitted where the collection timed its reference workload and label passes)")
    parser.add_argument("--repeat", default=None, metavar="DATASET",
                        help="another collection of the same configurations, made at another time: adds a "
                             "'repeat' row (each tested configuration's label there, times the machine's drift "
                             "between the two) and scores every model on the configurations both have: how far "
                             "the labels themselves repeat")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--json-out", default=None, metavar="FILE",
                        help="also write that JSON object to FILE (the tables are still printed)")
    parser.set_defaults(run=run)


def settings_from(args):
    from itercast.predict.evaluate import Settings

    return Settings(models=tuple(args.models), split=args.split, folds=args.folds, seed=args.seed, rounds=args.rounds,
                    ets_seconds=args.ets_seconds, ets_threads=args.ets_threads,
                    calibration_folds=args.calibration_folds or None)


def run(args) -> int:
    from itercast.predict.dataset import Dataset
    from itercast.predict.evaluate import evaluate, limit_configs, load_samples

    settings = settings_from(args)
    machine_speed = not args.no_machine_speed
    dataset = limit_configs(Dataset.from_manifest(args.dataset, machine_speed), args.limit_configs, args.seed)
    samples = load_samples(dataset, args.cache)
    repeat = Dataset.from_manifest(args.repeat, machine_speed) if args.repeat else None
    folds = None
    if args.test_on:
        tested = Dataset.from_manifest(args.test_on, machine_speed)
        overlap = {c.config_id for c in tested.configs} & {c.config_id for c in dataset.configs}
        if overlap:
            raise ItercastError(f"{args.test_on} shares {len(overlap)} configurations with {args.dataset} "
                                f"(e.g. {sorted(overlap)[0]}): a test set must be unseen in training")
        folds = [(np.arange(len(samples)), np.arange(len(samples), len(samples) + len(tested)))]
        samples = samples + load_samples(tested)
        # scored on the tested collection: its labels' floor is the one beside the errors
        dataset = replace(dataset, configs=dataset.configs + tested.configs, label_floor=tested.label_floor)
        settings = replace(settings, split="test-on", folds=1)
    result = evaluate(samples, settings, verbose=not args.json, repeat=repeat, folds=folds,
                      label_floor=dataset.label_floor)
    subset = None
    if args.also_on:
        subset = result.only(config.config_id for config in Dataset.from_manifest(args.also_on).configs)
    if args.plot:
        result.write_plot(args.plot)
    if args.families_csv:
        result.write_family_csv(args.families_csv)
    if args.predictions:
        result.write_predictions_csv(args.predictions, dataset.configs)
    if args.json or args.json_out:
        also = {"also_on": {"dataset": args.also_on, **subset.to_dict()}} if subset else {}
        speed = {"machine_speed": {"exponent": dataset.machine_speed.exponent, "pairs": dataset.machine_speed.pairs,
                                   "median_reference_ms": dataset.machine_speed.medians}} if dataset.machine_speed else {}
        document = json.dumps({**result.to_dict(), "settings": asdict(settings), **speed, **also})
        if args.json_out:
            Path(args.json_out).write_text(document + "\n")
        if args.json:
            print(document)
            return 0
    print(f"labels timed as {dataset.label_protocol} (docs/collect.md, \"Label protocols\")")
    passes = sorted({config.label_passes for config in dataset.configs})
    if passes != [1]:
        spread = sum(config.label_spread for config in dataset.configs) / len(dataset.configs)
        counts = str(passes[0]) if len(passes) == 1 else f"{passes[0]}-{passes[-1]}"
        print(f"un-profiled labels: the median of {counts} label passes per configuration; "
              f"a pass strays from its median by {spread:.1%} on average")
    if dataset.machine_speed is not None and dataset.machine_speed.exponent > 0:
        print(f"labels and trace times divided by the machine's speed then: (reference time / median) ** "
              f"{dataset.machine_speed.exponent:.2f}, fitted on {dataset.machine_speed.pairs} label-pass pairs")
    print(result.table())
    by_hardware = result.hardware_table()
    if by_hardware:
        print()
        print(by_hardware)
    print()
    print(result.family_table())
    print()
    print(result.line_table())
    if any(r.op_classes for r in result.results):
        print()
        print(result.op_class_tables())
    if subset:
        print()
        print(f"Scored on {args.also_on} only:")
        print(subset.table())
        print()
        print(subset.family_table())
        print()
        print(subset.line_table())
        if any(r.op_classes for r in subset.results):
            print()
            print(subset.op_class_tables())
    for label, path in (("plot", args.plot), ("per-family CSV", args.families_csv),
                        ("predictions CSV", args.predictions)):
        if path:
            print(f"{label}: {path}", file=sys.stderr)
    return 0
