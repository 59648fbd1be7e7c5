"""itercast collect: train the model zoo and write labeled Kineto traces plus a manifest."""

from __future__ import annotations

import sys

from itercast.cli import options
from itercast.collect import zoo
from itercast.collect.manifest import LABEL_PROTOCOLS
from itercast.collect.measure import Protocol
from itercast.collect.runner import DEFAULT_TIME_LIMIT_S, DTYPES, suites
from itercast.errors import ItercastError


def register(subparsers):
    parser = subparsers.add_parser(
        "collect", help="collect labeled Kineto traces from a model zoo",
        description="Runs training steps of each zoo model over a grid of batch and input "
                    "sizes; writes DIR/traces/<config>.pt.trace.json.gz and DIR/manifest.csv. "
                    "Configurations already in the manifest are skipped.")
    parser.add_argument("--out", metavar="DIR", help="output directory (created if missing)")
    parser.add_argument("--suite", choices=("zoo", "blind"), default="zoo",
                        help="zoo: the training zoo (default); blind: architectures whose op types the zoo "
                             "never runs, to test a zoo-trained predictor on")
    every_suite = [spec for models in suites().values() for spec in models.values()]
    options.add_list_option(parser, "--models", metavar="NAME", space_separated=True,
                            choices=sorted({spec.name for spec in every_suite}),
                            help="models of the suite (default: all)")
    options.add_list_option(parser, "--families", metavar="FAMILY", space_separated=True,
                            choices=sorted({spec.family for spec in every_suite}),
                            help="only models of these families")
    options.add_list_option(parser, "--batch-sizes", item_type=int, metavar="N", space_separated=True,
                            default=list(zoo.DEFAULT_BATCH_SIZES), help="batch sizes of the grid")
    options.add_list_option(parser, "--input-sizes", item_type=int, metavar="N", space_separated=True,
                            help="override every model's default input sizes (px, tokens, ...)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads (torch.set_num_threads); default 1 for stable labels")
    parser.add_argument("--dtype", default="float32", choices=DTYPES)
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S, metavar="SECONDS",
                        help="per-configuration limit in seconds; a slower one is recorded as timeout")
    parser.add_argument("--label-passes", type=int, default=1, metavar="N",
                        help="time each ok configuration's un-profiled steps in N passes over the "
                             "grid (the first is the profiled run's own), minutes apart, into "
                             "DIR/labels.csv; a label is their median, and with 2 or more the machine's "
                             "slowdown at each measurement is fitted and divided out (default 1)")
    parser.add_argument("--label-protocol", choices=LABEL_PROTOCOLS, default=Protocol.label_protocol,
                        help="how labels are timed: fresh-loop (default) measures each configuration in a fresh "
                             "process and times its label as a training loop's consecutive steps between runs of a "
                             "reference step; paired-rounds pairs each un-profiled step with a reference step and "
                             "visits a block of configurations in shuffled rounds in one worker; wall times "
                             "consecutive steps (docs/collect.md)")
    parser.add_argument("--worker-per-model", action="store_true",
                        help="run each model in a fresh worker process (default: one worker for the "
                             "whole grid), so that no model inherits another's memory state")
    parser.add_argument("--workers", type=options.non_negative_int, default=0, metavar="N",
                        help="worker processes measuring side by side, each pinned to its own core(s); 0 (default): "
                             "one per core, or with --device cuda one per GPU; more than the cores is allowed, with "
                             "a warning (labels are then slower to take)")
    parser.add_argument("--dask", metavar="ADDRESS",
                        help="measure on this dask.distributed scheduler's workers instead (traces come back here)")
    parser.add_argument("--list", action="store_true", help="print the zoo and exit")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.list:
        print_zoo(sys.stdout, args.suite)
        return 0
    if not args.out:
        raise ItercastError("--out DIR is required (or use --list)")
    from itercast.collect import collect  # looked up here so that tests can replace it

    rows = collect(args.out, models=selected_models(args.models, args.families, args.suite),
                   batch_sizes=args.batch_sizes, input_sizes=args.input_sizes,
                   device=args.device, threads=args.threads, dtype=args.dtype,
                   time_limit_s=args.time_limit, label_passes=args.label_passes,
                   protocol=Protocol(label_protocol=args.label_protocol),
                   worker_per_model=args.worker_per_model, workers=args.workers, dask=args.dask,
                   progress_stream=options.progress_stream(args.quiet))
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    print(f"{len(rows)} configurations in {args.out}/manifest.csv: {summary}")
    return 0


def selected_models(names, families, suite: str = "zoo"):
    """The model names to collect: ``names`` (all of ``suite`` by default), only ``families``' if given."""
    models = suites()[suite]
    if not families:
        return names if names or suite == "zoo" else list(models)
    pool = names if names else list(models)
    # Unknown names stay in, so that collect() reports them rather than dropping them silently.
    chosen = [name for name in pool if name not in models or models[name].family in families]
    if not chosen:
        raise ItercastError(f"no {suite} model matches the given --models and --families")
    return chosen


def print_zoo(stream, suite: str = "zoo"):
    stream.write(f"{'model':22} {'family':20} {'arch':14} {'inputs':16} optimizer\n")
    for spec in suites()[suite].values():
        sizes = ",".join(map(str, spec.input_sizes)) + " " + spec.input_unit
        stream.write(f"{spec.name:22} {spec.family:20} {spec.arch:14} {sizes:16} {spec.optimizer}\n")
