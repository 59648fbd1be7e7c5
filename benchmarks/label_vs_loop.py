"""A collection's labels against the steady-state step of a plain training loop.

The label `itercast collect` writes (the un-profiled step time the predictor learns from, as
``itercast.predict.Dataset.from_manifest`` reads it) should be what a user's training loop runs at.
This times that loop for a collection's configurations and compares:

- the **loop**: a fresh Python process per configuration (``--loop CONFIG_ID``, a child of this script,
  pinned with ``taskset -c --core``), the zoo's own workload and optimizer
  (``collect.zoo.MODELS[name].build(batch, input_size)``, ``collect.measure.make_optimizer`` and
  ``training_step``), torch's defaults but ``torch.set_num_threads(threads)`` and ``torch.manual_seed(0)``
  (no ``set_flush_denormal``), ``--warmup`` untimed steps, then ``--steps`` consecutive steps, each timed with
  ``time.perf_counter_ns`` (and synchronised on CUDA); the process prints them as JSON and the parent keeps
  their median. ``--rounds`` rounds, each visiting the configurations in a shuffled order (``--seed``);
  a configuration's loop time is the median of its rounds' medians;
- per configuration ``label / loop - 1``; the median and p90 of ``|label / loop - 1|``, overall and per
  family, and the signed median per family (which way the labels lean).

Variants (``--variant``), one factor each, to find what moves a label:

- ``plain`` (default): the loop above;
- ``ftz``: ``torch.set_flush_denormal(True)`` before building, as the collector's measurement does;
- ``after-reference``: one untimed run of ``collect.measure.ReferenceWorkload(device, float32).run()``
  (the reference step the ``paired-rounds`` label protocol pairs each step with; float32 whatever the
  configuration's dtype, as the collector builds it) before every step: the step runs with the
  reference's data in the caches, as a paired step does (the collector's visit also times several steps
  or several references per pair, depending on their lengths; this does not);
- ``worker``: each round one long-lived process (per worker) times its configurations one after another, as
  the collector's worker does; between two the last one's tensors are dropped and ``gc.collect()`` runs.
  Without the collector's profiling and without its keeping a block's configurations alive together.

``--out`` gets one row per (configuration, round) as each loop finishes (config_id, round, median_ms,
steps, iqr_ms, variant, finished_at); a rerun into the same file times only the missing pairs, and refuses
a file of another variant. ``--workers 2`` runs two loops at once, the second on another core: twice as
fast, and not quiet (the two loops share caches and memory bandwidth, which a label's loop on its own does
not); compare variants with ``--workers 1``.

    PYTHONPATH=python python3 benchmarks/label_vs_loop.py --dataset DIR --out loops.csv --configs 40
    PYTHONPATH=python python3 benchmarks/label_vs_loop.py --dataset DIR --out loops.csv --compare --json cmp.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
VARIANTS = ("plain", "ftz", "after-reference", "worker")
LOOP_COLUMNS = ("config_id", "round", "median_ms", "steps", "iqr_ms", "variant", "finished_at")
LOOP_MARK = "LOOP "  # a child's result line: this, then JSON (torch may print other lines)
CONFIG_FIELDS = ("model", "batch_size", "input_size", "dtype", "device", "threads")
CONFIG_ID = re.compile(r"^(?P<model>.+)-b(?P<batch_size>\d+)-s(?P<input_size>\d+)-(?P<dtype>[A-Za-z0-9]+)"
                       r"-(?P<device>[A-Za-z]+)(?P<index>\d*)-t(?P<threads>\d+)$")


# --- one loop, in the child process ---------------------------------------------------------------

def parse_config_id(config_id: str) -> dict:
    """The fields of a configuration id (collect.manifest.config_id: model-bB-sS-dtype-device-tT)."""
    match = CONFIG_ID.match(config_id)
    if match is None:
        raise ValueError(f"not a configuration id: {config_id!r} (model-bBATCH-sSIZE-DTYPE-DEVICE-tTHREADS)")
    device = match["device"] + (f":{match['index']}" if match["index"] else "")
    return {"model": match["model"], "batch_size": int(match["batch_size"]), "input_size": int(match["input_size"]),
            "dtype": match["dtype"], "device": device, "threads": int(match["threads"])}


def loop_times(config: dict, warmup: int, steps: int, variant: str) -> list[float]:
    """``steps`` consecutive training steps of ``config`` (CONFIG_FIELDS) after ``warmup`` untimed ones, ms each.

    Changes this process's torch settings (threads; flushing for ``ftz``): meant for a fresh process."""
    import torch

    from itercast.collect.measure import ReferenceWorkload, make_optimizer, synchronised, timed_ns, training_step
    from itercast.collect.zoo import MODELS

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    torch.set_num_threads(config["threads"])
    if variant == "ftz":
        torch.set_flush_denormal(True)
    torch.manual_seed(0)
    device = torch.device(config["device"])
    spec = MODELS[config["model"]]
    workload = spec.build(config["batch_size"], config["input_size"])
    workload.to(device, getattr(torch, config["dtype"]))
    workload.model.train()
    step = synchronised(training_step(workload, make_optimizer(spec.optimizer, workload.model)), device)
    before = None  # what runs, untimed, before each step
    if variant == "after-reference":
        before = synchronised(ReferenceWorkload(device, torch.float32).run, device)
    for _ in range(warmup):
        if before:
            before()
        step()
    times = []
    for _ in range(steps):
        if before:
            before()
        times.append(timed_ns(step) / 1e6)
    return times


def loop_main(config_ids: list[str], warmup: int, steps: int, variant: str) -> None:
    """Times each configuration in this process, one after another, and prints one LOOP line each."""
    import gc

    import torch

    from itercast.collect.measure import flushes_denormals

    for config_id in config_ids:
        times = loop_times(parse_config_id(config_id), warmup, steps, variant)
        print(LOOP_MARK + json.dumps({"config_id": config_id, "variant": variant, "steps_ms": times,
                                      "threads": torch.get_num_threads(),
                                      "flush_denormal": flushes_denormals()}), flush=True)
        gc.collect()  # the last configuration's tensors, before the next is built (collect.worker.release_memory)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


# --- choosing configurations ------------------------------------------------------------------------

def stratified(families: dict[str, str], n: int | None, seed: int) -> list[str]:
    """``n`` of the configurations (config id -> family), spread over the families in proportion to their
    sizes (each family at least one while ``n`` allows), each family's drawn at random; all without ``n``."""
    ids = sorted(families)
    if n is None or n >= len(ids):
        return ids
    rng = np.random.default_rng(seed)
    groups: dict[str, list[str]] = {}
    for config_id in ids:
        groups.setdefault(families[config_id], []).append(config_id)
    names = sorted(groups)
    quota = {name: 0 for name in names}
    if n >= len(names):
        quota = {name: 1 for name in names}
    left = n - sum(quota.values())
    remaining = {name: len(groups[name]) - quota[name] for name in names}
    total = sum(remaining.values())
    shares = {name: left * remaining[name] / total for name in names}
    for name in names:
        quota[name] += math.floor(shares[name])
    tie = {name: rng.random() for name in names}
    by_remainder = sorted(names, key=lambda name: (-(shares[name] - math.floor(shares[name])), tie[name]))
    for name in by_remainder[:n - sum(quota.values())]:
        quota[name] += 1
    chosen = []
    for name in names:
        chosen += list(rng.choice(groups[name], size=min(quota[name], len(groups[name])), replace=False))
    return sorted(str(config_id) for config_id in chosen)


def manifest_configs(dataset: Path) -> dict[str, dict]:
    """Config id -> its manifest row (CONFIG_FIELDS and family), for the manifest's ok rows."""
    from itercast.collect.manifest import MANIFEST_NAME, Manifest

    rows = {}
    for row in Manifest(dataset / MANIFEST_NAME).rows():
        if row["status"] != "ok":
            continue
        parsed = parse_config_id(row["config_id"])
        listed = {field: row[field] for field in CONFIG_FIELDS}
        if parsed != listed:
            raise SystemExit(f"{row['config_id']}: its id says {parsed}, its manifest row {listed}")
        rows[row["config_id"]] = row
    return rows


def dataset_labels(dataset: Path) -> dict[str, tuple[str, float]]:
    """Config id -> (family, label ms): the label the predictor learns from."""
    from itercast.predict import Dataset

    return {config.config_id: (config.family, config.step_ms) for config in Dataset.from_manifest(dataset).configs}


# --- running the loops --------------------------------------------------------------------------------

def read_loops(path: Path) -> list[dict]:
    if not path.exists() or path.stat().st_size == 0:
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


class LoopWriter:
    """Appends loop rows to ``path`` as they come (from several threads), header first on a new file."""

    def __init__(self, path: Path):
        self.path, self.lock = path, threading.Lock()

    def append(self, row: dict) -> None:
        with self.lock:
            new = not self.path.exists() or self.path.stat().st_size == 0
            with open(self.path, "a", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=LOOP_COLUMNS)
                if new:
                    writer.writeheader()
                writer.writerow(row)


def plan(config_ids: list[str], rounds: int, seed: int, done: set[tuple[str, int]], variant: str,
         workers: int) -> list[tuple[int, list[str]]]:
    """The processes to run, in order: (round, the configurations it times). Each round visits the
    configurations in its own shuffled order (stable for a seed, so a resumed run keeps it); ``worker``
    gives each worker one process a round, the others one process per configuration."""
    rng = np.random.default_rng(seed)
    tasks = []
    for round_ in range(rounds):
        order = [config_ids[index] for index in rng.permutation(len(config_ids))]
        order = [config_id for config_id in order if (config_id, round_) not in done]
        if variant == "worker":
            tasks += [(round_, order[start::workers]) for start in range(workers) if order[start::workers]]
        else:
            tasks += [(round_, [config_id]) for config_id in order]
    return tasks


def child_environment() -> dict:
    """This process's environment, with the working tree's python/ first on the path."""
    path = [str(HERE / "python")] + [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def run_process(round_: int, config_ids: list[str], core: int, args, writer: LoopWriter) -> int:
    """One child process timing ``config_ids`` on ``core``; writes a row per configuration as it reports.
    Returns how many configurations failed (reported nothing)."""
    command = ["taskset", "-c", str(core), sys.executable, str(Path(__file__).resolve()), "--loop",
               ",".join(config_ids), "--warmup", str(args.warmup), "--steps", str(args.steps), "--variant",
               args.variant]
    reported = set()
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(command, cwd=HERE, env=child_environment(), stdout=subprocess.PIPE,
                                   stderr=errors, text=True)
        timer = threading.Timer(args.time_limit * len(config_ids), process.kill)
        timer.start()
        try:
            for line in process.stdout:
                if not line.startswith(LOOP_MARK):
                    continue
                result = json.loads(line[len(LOOP_MARK):])
                wrong = settings_error(result, args.variant)
                if wrong:
                    print(f"round {round_} {result['config_id']}: not recorded, {wrong}", file=sys.stderr, flush=True)
                    continue
                times = np.array(result["steps_ms"])
                q25, median, q75 = np.percentile(times, [25, 50, 75])
                writer.append({"config_id": result["config_id"], "round": round_, "median_ms": float(median),
                               "steps": len(times), "iqr_ms": float(q75 - q25), "variant": args.variant,
                               "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
                reported.add(result["config_id"])
                print(f"round {round_} core {core} {result['config_id']}: {median:.3f} ms", flush=True)
            process.wait()
        finally:
            timer.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        if len(reported) < len(config_ids):
            errors.seek(0)
            tail = errors.read()[-2000:]
            print(f"round {round_}: {len(config_ids) - len(reported)} of {', '.join(config_ids)} failed "
                  f"(exit code {process.returncode}):\n{tail}", file=sys.stderr, flush=True)
    return len(config_ids) - len(reported)


def settings_error(result: dict, variant: str) -> str | None:
    """Why a loop did not run with the variant's settings (flushing only for ftz, the configuration's threads),
    or None."""
    wanted = variant == "ftz"
    if result["flush_denormal"] != wanted:
        return f"it ran with flush_denormal {result['flush_denormal']}, the {variant} variant wants {wanted}"
    threads = parse_config_id(result["config_id"])["threads"]
    if result["threads"] != threads:
        return f"it ran on {result['threads']} threads, not {threads}"
    return None


def cores_for(args) -> list[int]:
    available = sorted(os.sched_getaffinity(0))
    if args.core not in available:
        raise SystemExit(f"--core {args.core} is not among this process's cores {available}")
    cores = [args.core] + [core for core in available if core != args.core][:args.workers - 1]
    if len(cores) < args.workers:
        raise SystemExit(f"--workers {args.workers} needs {args.workers} cores; this process has {available}")
    return cores


def run_loops(config_ids: list[str], args) -> int:
    """Times every missing (configuration, round) of ``config_ids`` into args.out; the failures' count."""
    out = Path(args.out)
    existing = read_loops(out)
    other = sorted({row.get("variant") for row in existing} - {args.variant})
    if other:
        raise SystemExit(f"{out} holds loops of variant {', '.join(map(str, other))}; "
                         f"write the {args.variant} variant into another file")
    done = {(row["config_id"], int(row["round"])) for row in existing}
    tasks = plan(config_ids, args.rounds, args.seed, done, args.variant, args.workers)
    pending = sum(len(ids) for _, ids in tasks)
    print(f"{len(config_ids)} configurations x {args.rounds} rounds, variant {args.variant}: {pending} loops to time "
          f"({len(config_ids) * args.rounds - pending} in {out} already)", flush=True)
    writer = LoopWriter(out)
    work: queue.Queue = queue.Queue()
    for task in tasks:
        work.put(task)
    failures = []

    def serve(core: int) -> None:
        while True:
            try:
                round_, ids = work.get_nowait()
            except queue.Empty:
                return
            failures.append(run_process(round_, ids, core, args, writer))

    started = time.monotonic()
    threads = [threading.Thread(target=serve, args=(core,)) for core in cores_for(args)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"timed in {time.monotonic() - started:.0f} s: {out}", flush=True)
    return sum(failures)


# --- comparing ----------------------------------------------------------------------------------------

def loop_medians(rows: list[dict]) -> dict[str, list[float]]:
    """Config id -> its rounds' median step times (ms), in round order."""
    rounds: dict[str, dict[int, float]] = {}
    for row in rows:
        rounds.setdefault(row["config_id"], {})[int(row["round"])] = float(row["median_ms"])
    return {config_id: [values[index] for index in sorted(values)] for config_id, values in rounds.items()}


def summary(errors: list[float]) -> dict:
    values = np.array(errors, dtype=float)
    return {"configs": int(len(values)), "median_abs": float(np.median(np.abs(values))),
            "p90_abs": float(np.percentile(np.abs(values), 90)), "median_signed": float(np.median(values))}


def compare(labels: dict[str, tuple[str, float]], loops: dict[str, list[float]]) -> dict:
    """Per configuration both time: label / loop - 1 (loop: the median of its rounds' medians); their median
    and p90 of |label / loop - 1| and signed median, overall and per family."""
    configs = {}
    for config_id in sorted(set(labels) & set(loops)):
        family, label = labels[config_id]
        loop = float(np.median(loops[config_id]))
        configs[config_id] = {"family": family, "label_ms": label, "loop_ms": loop, "rounds": len(loops[config_id]),
                              "error": label / loop - 1}
    families: dict[str, list[float]] = {}
    for values in configs.values():
        families.setdefault(values["family"], []).append(values["error"])
    return {"configs": configs,
            "overall": summary([values["error"] for values in configs.values()]) if configs else None,
            "families": {family: summary(errors) for family, errors in sorted(families.items())},
            "loops_without_label": sorted(set(loops) - set(labels))}


def print_comparison(result: dict, rounds: int | None = None) -> None:
    configs = result["configs"]
    if not configs:
        print("no configuration has both a label and a loop")
        return
    width = max(len(config_id) for config_id in configs)
    print(f"{'configuration':{width}} {'family':20} {'label ms':>10} {'loop ms':>10} {'rounds':>6} "
          f"{'label/loop-1':>12}")
    for config_id, values in configs.items():
        print(f"{config_id:{width}} {values['family']:20} {values['label_ms']:10.3f} {values['loop_ms']:10.3f} "
              f"{values['rounds']:6d} {values['error']:+12.1%}")
    overall = result["overall"]
    print(f"\n|label / loop - 1| over {overall['configs']} configurations: median {overall['median_abs']:.1%}, "
          f"p90 {overall['p90_abs']:.1%} (signed median {overall['median_signed']:+.1%})")
    print(f"\n{'family':20} {'configs':>7} {'median |e|':>10} {'p90 |e|':>8} {'signed median':>13}")
    for family, values in result["families"].items():
        print(f"{family:20} {values['configs']:7d} {values['median_abs']:10.1%} {values['p90_abs']:8.1%} "
              f"{values['median_signed']:+13.1%}")
    short = [config_id for config_id, values in configs.items() if rounds and values["rounds"] < rounds]
    if short:
        print(f"\n{len(short)} configurations have fewer than {rounds} rounds (resume to time the rest)")
    if result["loops_without_label"]:
        print(f"{len(result['loops_without_label'])} timed configurations have no ok label in the dataset, left out")


# --- the command ----------------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, help="a collection directory (manifest.csv, labels.csv)")
    parser.add_argument("--out", type=Path, help="the loops' CSV: written as they finish, resumed from")
    parser.add_argument("--configs", type=int, metavar="N", help="time N configurations, stratified by family")
    parser.add_argument("--models", help="only these models (comma-separated)")
    parser.add_argument("--seed", type=int, default=0, help="which configurations, and the rounds' orders")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--core", type=int, default=0, help="the core the loops run on (taskset)")
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1,
                        help="2: two loops at once, one per core (faster, not quiet)")
    parser.add_argument("--variant", choices=VARIANTS, default="plain")
    parser.add_argument("--time-limit", type=float, default=600.0, metavar="SECONDS",
                        help="per configuration of a loop process, after which it is killed")
    parser.add_argument("--compare", action="store_true", help="only compare the labels with the loops in --out")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the comparison here")
    parser.add_argument("--loop", metavar="CONFIG_ID[,...]", help=argparse.SUPPRESS)  # the child's side
    args = parser.parse_args(argv)
    if args.loop is None and (args.dataset is None or args.out is None):
        parser.error("--dataset and --out are required")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0:
        parser.error("--rounds and --steps must be at least 1, --warmup at least 0")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.loop is not None:
        loop_main(args.loop.split(","), args.warmup, args.steps, args.variant)
        return 0
    labels = dataset_labels(args.dataset)
    failures = 0
    if not args.compare:
        rows = manifest_configs(args.dataset)
        candidates = {config_id: labels[config_id][0] for config_id in rows if config_id in labels}
        if args.models:
            models = set(args.models.split(","))
            unknown = models - {rows[config_id]["model"] for config_id in candidates}
            if unknown:
                raise SystemExit(f"no ok configuration of {', '.join(sorted(unknown))} in {args.dataset}")
            candidates = {config_id: family for config_id, family in candidates.items()
                          if rows[config_id]["model"] in models}
        failures = run_loops(stratified(candidates, args.configs, args.seed), args)
    result = compare(labels, loop_medians(read_loops(args.out)))
    result.update({"dataset": str(args.dataset), "loops": str(args.out),
                   "variants": sorted({row["variant"] for row in read_loops(args.out)})})
    print_comparison(result, args.rounds)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
