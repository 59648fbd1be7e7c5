"""itercast demo: the whole pipeline on this machine in a few minutes.

Collects a small zoo (CPU, one thread) and times its labels a second time (their floor: how far two
measurements of one label differ), evaluates the predictor by architecture against the ETS reference and
the baselines (k folds: every architecture is a test architecture once, so the figures rest on all of them,
not on a random fifth that changes from collection to collection), trains on all but one architecture and
predicts that held-out one, then prints and plots.
"""

from __future__ import annotations

import time
from pathlib import Path

from itercast.cli import options
from itercast.collect.measure import Protocol

# Small members of every family, quick to run on one CPU thread.
DEMO_MODELS = ("resnet18", "mobilenet_v3_small", "squeezenet1_1", "regnet_x_200mf", "vit_micro", "mixer_small",
               "bert_tiny", "bert_mini", "gpt_nano", "gpt_micro", "seq2seq_tiny", "lstm_256", "gru_256",
               "mlp_512x3", "autoencoder_512", "dlrm_small", "ncf", "wide_and_deep")
HELD_OUT = "gpt_micro"
BATCH_SIZES = (2, 8)
# Shorter labels than a collection's (0.15 s of loop steps, not 0.5 s) and fewer warm-up steps, for a demo of a
# few minutes; collected with a worker per core.
DEMO_PROTOCOL = Protocol(warmup_steps=2, measured_steps=5, min_measured_seconds=0.15)
# The evaluation's folds by architecture, at most: fewer when there are fewer architectures, each one then a
# fold of its own. Every architecture is tested once either way.
MAX_FOLDS = 5
# The ETS reference's training budget, every fold together: what one holdout trained for before the folds.
ETS_SECONDS = 30.0


def register(subparsers) -> None:
    from itercast.collect import zoo

    parser = subparsers.add_parser("demo", help="collect a small zoo, evaluate, train and predict, end to end")
    parser.add_argument("--out", default="itercast-demo", help="working directory (default ./itercast-demo)")
    parser.add_argument("--ets-seconds", type=float, default=ETS_SECONDS, metavar="SECONDS",
                        help="training budget of the ETS reference in seconds, all folds together: split "
                             f"evenly over the evaluation's folds (up to {MAX_FOLDS}, by architecture; default "
                             f"{ETS_SECONDS:g}, {ETS_SECONDS / MAX_FOLDS:g} s per fold)")
    options.add_list_option(parser, "--models", default=DEMO_MODELS, metavar="NAME", choices=tuple(zoo.MODELS),
                            help="zoo models to collect")
    parser.add_argument("--held-out", default=HELD_OUT, help=f"architecture to predict unseen (default {HELD_OUT})")
    dataset = options.add_dataset_option(parser, "use this existing collection instead of collecting",
                                         required=False)
    options.add_deprecated_alias(parser, "--collection", dataset)
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.collect import collect
    from itercast.errors import ItercastError
    from itercast.predict import Dataset, Predictor, featurise
    from itercast.predict.evaluate import Settings, evaluate, split_folds

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    collection = Path(args.dataset) if args.dataset else out / "collection"
    if not args.dataset:
        models = list(args.models)
        print(f"1/4 collecting {len(models)} models x batch {BATCH_SIZES} on this CPU into {collection}, "
              f"each label timed twice")
        collect(collection, models=models, batch_sizes=BATCH_SIZES, label_passes=2, protocol=DEMO_PROTOCOL)
    dataset = Dataset.from_manifest(collection)
    samples = featurise(dataset.configs)
    training = [s for s in samples if s.config.model != args.held_out]
    held_out = [s for s in samples if s.config.model == args.held_out]
    if not held_out:
        raise ItercastError(f"the collection has no {args.held_out!r} to hold out")

    architectures = {s.config.model for s in training}
    if len(architectures) < 2:
        raise ItercastError(f"an evaluation by architecture needs at least 2 architectures besides "
                            f"{args.held_out}; the collection has {len(architectures)}")
    fold_count = min(MAX_FOLDS, len(architectures))
    settings = Settings(split="arch", folds=fold_count, ets_seconds=args.ets_seconds / fold_count)
    folds = split_folds(training, settings.split, settings.folds, settings.seed)
    print(f"\n2/4 evaluating by architecture in {fold_count} folds: each of the {len(architectures)} architectures "
          f"is a test architecture once, predicted by models that never trained on it ({len(training)} "
          f"configurations; the ETS reference trains {round(settings.ets_seconds, 2):g} s per fold, "
          f"{args.ets_seconds:g} s in all)")
    for k, (_, test) in enumerate(folds):
        tested = sorted({training[i].config.model for i in test})
        print(f"  fold {k + 1}/{fold_count} tests {len(test)} configurations of {', '.join(tested)}")
    evaluation = evaluate(training, settings, folds=folds, label_floor=dataset.label_floor)
    print(evaluation.table())
    print(evaluation.family_table())
    evaluation.write_plot(out / "predicted_vs_measured.png")

    print(f"\n3/4 training the predictor on every architecture but {args.held_out}")
    predictor = Predictor().fit(training)
    predictor.save(out / "model.itc")

    print(f"\n4/4 predicting the held-out {args.held_out}: its traces ran here, on the target, so the hybrid "
          f"prices what the model has not seen from their own times; structure alone is what a trace from "
          f"other hardware gets")
    floor = dataset.label_floor.errors if dataset.label_floor else {}
    for sample in held_out:
        measured = sample.config.step_ms
        repeat = floor.get(sample.config.config_id)
        hybrid = predictor.predict(sample.config.trace_path, trace_hardware=sample.config.hardware)
        structure = predictor.predict(sample.config.trace_path, mode="structure")
        print(f"  {sample.config.config_id:40} measured {measured:9.2f} ms   "
              f"hybrid {hybrid.predicted_ms:9.2f} ms ({relative_error(hybrid.predicted_ms, measured)})   "
              f"structure {structure.predicted_ms:9.2f} ms ({relative_error(structure.predicted_ms, measured)})   "
              f"unseen {structure.unseen_time_fraction:.0%} of the op time   "
              f"label floor {'-' if repeat is None else f'{repeat:.1%}'}")
    print(f"\ndone in {time.perf_counter() - start:.0f} s: model {out / 'model.itc'}, "
          f"plot {out / 'predicted_vs_measured.png'}")
    return 0


def relative_error(predicted: float, measured: float) -> str:
    return f"error {100 * abs(predicted - measured) / measured:5.1f}%"
