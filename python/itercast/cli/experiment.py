"""itercast experiment: experiments that join the project's halves, one subcommand each."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from itercast.cli import options
from itercast.cli.sim import _report_bad_rows, _time_option
from itercast.errors import ItercastError
from itercast.sched.tuner import OBJECTIVES, TunerSettings

PREDICTION_SPLIT = "arch"
PREDICTION_FOLDS = 5  # every configuration predicted once, by models that never saw its architecture
PREDICTIONS_NAME = "predictions.csv"  # a collection's held-out predictions, computed when missing
PROVENANCE_SUFFIX = ".provenance.json"  # beside it: what made it (ensure_predictions)
AUTOSCHED_ESTIMATORS = ("oracle", "lightgbm", "opbased", "ets")
SIA_MODEL_CHOICES = ("closest", "family")
WORKLOAD_ESTIMATOR = "lightgbm"  # --write-workload's estimated_duration


def register(subparsers) -> None:
    parser = subparsers.add_parser("experiment", help="experiments joining the predictor and the scheduler")
    experiments = parser.add_subparsers(dest="experiment", required=True)
    sched = experiments.add_parser(
        "sched-prediction", help="schedule a workload with each estimator's iteration times",
        description="Gives each job of a workload a configuration of a collected dataset, estimates its "
                    "duration with each estimator (oracle, this project's predictor held out by architecture, "
                    "the baselines, synthetic accuracy levels) and schedules it under SJF, SRTF, QSSF, LST and "
                    "AutoSched, beside FIFO, LAS, Tiresias and EDF. See docs/sched-prediction.md.")
    options.add_dataset_option(
        sched, help="a collection directory (its held-out predictions are computed into DIR/predictions.csv "
                    "unless --predictions names a file, and recomputed when --prediction-seed, --ets-seconds, the "
                    "manifest or the code differ from what made them) or a predictions CSV")
    sched.add_argument("--predictions", metavar="CSV", action="append",
                       help="held-out predictions (itercast evaluate --folds K --predictions); repeatable, "
                            "e.g. one file per hardware target; default: DIR/predictions.csv, computed when missing")
    options.add_list_option(sched, "--hardware", metavar="KEY",
                            help="the dataset's hardware target(s) to take iteration times from: a key or a part "
                                 "of one naming it alone; several for a heterogeneous cluster, one GPU type per "
                                 "target, --gpus split evenly between them")
    sched.add_argument("--workload", required=True, help="a Philly/Helios/Tiresias CSV or a Sia-style workload")
    sched.add_argument("--gpus", type=int, required=True)
    sched.add_argument("--gpus-per-node", type=int, required=True)
    sched.add_argument("--start", help="keep jobs submitted at or after this time (seconds or ISO date)")
    sched.add_argument("--end", help="keep jobs submitted before this time (seconds or ISO date)")
    options.add_list_option(sched, "--vc", metavar="NAME", help="keep the jobs of these virtual clusters only")
    sched.add_argument("--seed", type=int, default=0, help="configuration draw, synthetic errors, deadlines")
    sched.add_argument("--prediction-seed", type=int, default=0,
                       help="the held-out predictions' folds and training, when they are computed (default 0); "
                            "apart from --seed, so that every draw of a workload is scheduled with the same "
                            "predictions")
    sched.add_argument("--sia-models", default="closest", choices=SIA_MODEL_CHOICES,
                       help="a Sia workload's jobs run their application's closest zoo model (default), or each "
                            "a model drawn (seeded) from the dataset's models of the application's zoo family")
    options.add_list_option(sched, "--autosched-estimators", default=AUTOSCHED_ESTIMATORS, metavar="NAME",
                            choices=estimator_names(),
                            help=f"estimators AutoSched runs with (slow: a replay with hourly tuning each; "
                                 f"default {','.join(AUTOSCHED_ESTIMATORS)}, plus 'none'); '' for no AutoSched")
    options.add_workers_option(sched, "each AutoSched re-tune's what-if simulations")
    sched.add_argument("--objective", choices=OBJECTIVES, default=TunerSettings.objective,
                       help=f"what AutoSched minimises (itercast autosched --objective; default "
                            f"{TunerSettings.objective})")
    sched.add_argument("--tail-guard", type=float, default=TunerSettings.tail_guard, metavar="F",
                       help=f"AutoSched's tail guard, a fraction (default {TunerSettings.tail_guard})")
    sched.add_argument("--ets-seconds", type=float, default=120.0, metavar="SECONDS",
                       help="training budget of the ETS reference per fold in seconds, when predictions are "
                            "computed")
    sched.add_argument("--write-workload", metavar="CSV",
                       help="write the configured workload (estimated_duration from lightgbm, left out when the "
                            "predictions lack it; every estimator but the oracle as estimated_duration:<name>, read "
                            "with --estimator NAME) for itercast sim / autosched")
    sched.add_argument("--plot", metavar="PNG", help="average JCT per estimator and policy, relative to oracle")
    sched.add_argument("--json", action="store_true", help="print one JSON object")
    sched.set_defaults(run=run_sched_prediction)


def estimator_names() -> tuple[str, ...]:
    """Every name an estimator can have: the oracle, evaluate's models, the synthetic accuracies, none."""
    from itercast.predict.evaluate import DIAGNOSTICS, MODEL_NAMES, VARIANTS
    from itercast.sched.experiment import NONE
    from itercast.sched.jobs import ORACLE, SYNTHETIC_ACCURACIES, synthetic_name

    return (ORACLE, *MODEL_NAMES, *VARIANTS, *DIAGNOSTICS, *map(synthetic_name, SYNTHETIC_ACCURACIES), NONE)


def iteration_times(args):
    """The predictions file named, or the dataset's own, computed (and kept) when missing."""
    from itercast.sched.jobs import IterationTimes

    dataset = Path(args.dataset)
    if args.predictions:
        for path in map(Path, args.predictions):
            if not path.exists():
                raise ItercastError(f"{path}: no such predictions file")
        return IterationTimes.combine([IterationTimes.read(path) for path in args.predictions])
    if dataset.is_file():
        return IterationTimes.read(dataset)
    if not dataset.is_dir():
        raise ItercastError(f"{dataset}: no such predictions file")
    path = dataset / PREDICTIONS_NAME
    ensure_predictions(dataset, path, args.ets_seconds, args.prediction_seed)
    return IterationTimes.read(path)


def ensure_predictions(dataset: Path, path: Path, ets_seconds: float, seed: int) -> None:
    """``path`` made from what is asked now: kept when its provenance record matches, recomputed when
    the record names other settings, data or code; a file without a record is refused (nothing says
    what made it)."""
    wanted = prediction_provenance(dataset, ets_seconds, seed)
    record = provenance_path(path)
    if path.exists():
        if not record.exists():
            raise ItercastError(f"{path}: no record of what made it ({record.name}); delete it to have it "
                                f"recomputed, or pass it as --predictions {path}")
        stale = provenance_differences(json.loads(record.read_text()), wanted)
        if not stale:
            return
        print(f"{path} was made with {'; '.join(stale)}: recomputing it", file=sys.stderr)
        record.unlink()
    compute_predictions(dataset, path, ets_seconds, seed)
    record.write_text(json.dumps(wanted, indent=1, sort_keys=True) + "\n")


def provenance_path(path: Path) -> Path:
    return path.with_name(path.name + PROVENANCE_SUFFIX)


def prediction_provenance(dataset: Path, ets_seconds: float, seed: int) -> dict:
    """What held-out predictions of ``dataset`` depend on."""
    import itercast
    from itercast.collect.manifest import LABELS_NAME, MANIFEST_NAME
    from itercast.timeline import FEATURE_SCHEMA_VERSION

    return {"split": PREDICTION_SPLIT, "folds": PREDICTION_FOLDS, "seed": seed, "ets_seconds": ets_seconds,
            "manifest_sha256": _file_digest(dataset / MANIFEST_NAME),
            "labels_sha256": _file_digest(dataset / LABELS_NAME),
            "feature_schema_version": FEATURE_SCHEMA_VERSION, "itercast_version": itercast.__version__}


def provenance_differences(made: dict, wanted: dict) -> list[str]:
    return [f"{key} {made.get(key)!r} (now {value!r})" for key, value in wanted.items() if made.get(key) != value]


def _file_digest(path: Path):
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def compute_predictions(dataset: Path, path: Path, ets_seconds: float, seed: int) -> None:
    from itercast.predict.dataset import Dataset
    from itercast.predict.evaluate import Settings, evaluate, load_samples

    print(f"computing held-out predictions of {dataset} ({PREDICTION_FOLDS} folds by architecture) "
          f"into {path}", file=sys.stderr)
    data = Dataset.from_manifest(dataset)
    settings = Settings(split=PREDICTION_SPLIT, folds=PREDICTION_FOLDS, seed=seed, ets_seconds=ets_seconds)
    evaluate(load_samples(data), settings).write_predictions_csv(path, data.configs)


def cluster_for(gpu_types, gpus: int, gpus_per_node: int):
    """``gpus`` GPUs in nodes of ``gpus_per_node``, split evenly between the GPU types."""
    from itercast.sim import Cluster, GpuPool

    if len(gpu_types) == 1:
        return Cluster.homogeneous(gpus, gpus_per_node)
    nodes = gpus // gpus_per_node
    if gpus % gpus_per_node or nodes % len(gpu_types):
        raise ItercastError(f"--gpus {gpus} must make whole nodes of {gpus_per_node}, as many of each of the "
                            f"{len(gpu_types)} GPU types")
    return Cluster(tuple(GpuPool(gpu, nodes // len(gpu_types), gpus_per_node) for gpu in gpu_types))


def _require_output_directory(option: str, path) -> None:
    """Before minutes of simulation, not after: the file's directory must exist."""
    directory = Path(path).resolve().parent if path else None
    if directory is not None and not directory.is_dir():
        raise ItercastError(f"{option} {path}: no directory {directory}")


def write_workload(jobs, path) -> None:
    """The predictor's estimates as estimated_duration; without its predictions, no estimated_duration
    column (never the true durations in its place), and a note saying so."""
    if WORKLOAD_ESTIMATOR in jobs.estimates:
        jobs.write_csv(path, WORKLOAD_ESTIMATOR)
        return
    jobs.write_csv(path)
    print(f"note: the predictions have no {WORKLOAD_ESTIMATOR} column: {path} has no estimated_duration column; "
          f"pass --estimator NAME to itercast sim / autosched to rank by one of its estimated_duration:<name> "
          f"columns", file=sys.stderr)


def run_sched_prediction(args) -> int:
    from itercast.sched.evaluators import make_evaluator
    from itercast.sched.experiment import ESTIMATE_POLICIES, plot, run_experiment
    from itercast.sched.jobs import configure

    for option, path in (("--plot", args.plot), ("--write-workload", args.write_workload)):
        _require_output_directory(option, path)
    times = iteration_times(args)
    jobs = configure(args.workload, times, args.seed, start=_time_option("--start", args.start),
                     end=_time_option("--end", args.end), virtual_clusters=args.vc, hardware=args.hardware or [],
                     sia_models=args.sia_models)
    cluster = cluster_for(jobs.workload.gpu_types, args.gpus, args.gpus_per_node)
    _report_bad_rows(jobs.workload)
    if args.write_workload:
        write_workload(jobs, args.write_workload)
    chosen = list(args.autosched_estimators)
    policies = ESTIMATE_POLICIES if chosen else tuple(p for p in ESTIMATE_POLICIES if p != "autosched")
    experiment = run_experiment(jobs, cluster, policies=policies, autosched_estimators=chosen,
                                tuner_settings=TunerSettings(objective=args.objective, tail_guard=args.tail_guard),
                                evaluator=make_evaluator(options.workers_count(args.workers)))
    if args.plot:
        plot(experiment, args.plot, title=f"{Path(args.workload).name}, {args.gpus} GPUs")
    if args.json:
        print(json.dumps(experiment.to_dict()))
    else:
        print(experiment.table())
        print("MRE of the duration estimates over the jobs: " + ", ".join(
            f"{name} {errors['jobs']:.1%}" for name, errors in experiment.prediction_mre.items()))
    return 0
