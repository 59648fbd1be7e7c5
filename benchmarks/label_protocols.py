"""Candidate label protocols measured side by side, to choose the collection's by measurement.

One pass times a set of zoo configurations (one torch thread, CPU) under every protocol below and
writes one CSV row per (configuration, protocol). Two passes -- one on an idle machine, one while the
other core is busy (``--load pytest`` runs the test suite there, ``--load spin`` a 1-thread torch matmul
loop) -- compared with ``--compare A.csv B.csv`` give each protocol's pass-to-pass error (median and p90
of |b / a - 1| over the configurations, after dividing each pass by its median ratio), the figure a
label protocol must bring down.

Protocols (each after the same warm-up):
- ``wall``: consecutive steps, wall time, their median (what `itercast collect` does today);
- ``cpu``: the same steps' thread CPU time (one intra-op thread runs in the calling thread);
- ``paired``: a reference workload step and a configuration step alternately, the label the median of
  their per-pair ratios times the pass's median reference step: both see the same interference;
- ``rounds``: ``--rounds`` rounds that visit every configuration once each in a shuffled order,
  ``--round-steps`` steps a visit, the label the median of a configuration's per-round medians (wall),
  and ``rounds-cpu`` the same in thread CPU time;
- ``paired-rounds``: both -- each visit of each round times ``--round-steps`` reference/configuration
  pairs, the label the median of all a configuration's pair ratios times the pass's median reference step.

    PYTHONPATH=python python3 benchmarks/label_protocols.py --out idle.csv
    PYTHONPATH=python python3 benchmarks/label_protocols.py --out loaded.csv --load pytest
    PYTHONPATH=python python3 benchmarks/label_protocols.py --compare idle.csv loaded.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time

import numpy as np

# Small members of every zoo family at two batch sizes: steps of ~1-100 ms, a pass of a few minutes.
DEFAULT_MODELS = ("resnet18", "mobilenet_v3_small", "vit_micro", "bert_tiny", "gpt_nano", "lstm_256",
                  "gru_256", "mlp_512x3", "autoencoder_512", "dlrm_small", "ncf", "seq2seq_tiny")
PROTOCOLS = ("wall", "cpu", "paired", "rounds", "rounds-cpu", "paired-rounds")


def build(name: str, batch: int):
    import torch

    from itercast.collect.measure import make_optimizer, training_step
    from itercast.collect.zoo import MODELS

    spec = MODELS[name]
    torch.manual_seed(0)
    workload = spec.build(batch, spec.input_sizes[0]).to("cpu", torch.float32)
    workload.model.train()
    return f"{name}-b{batch}", training_step(workload, make_optimizer(spec.optimizer, workload.model))


def timed(step) -> tuple[int, int]:
    """(wall ns, thread CPU ns) of one call."""
    wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
    step()
    return time.perf_counter_ns() - wall, time.thread_time_ns() - cpu


def reference_step():
    from itercast.collect.measure import ReferenceWorkload

    import torch

    reference = ReferenceWorkload(torch.device("cpu"), torch.float32)

    def step():
        reference.compute()
        reference.memory()
        reference.overhead()

    return step


def contiguous(step, steps: int) -> dict[str, float]:
    times = np.array([timed(step) for _ in range(steps)])
    return {"wall": float(np.median(times[:, 0])), "cpu": float(np.median(times[:, 1]))}


def paired(step, reference, pairs: int) -> tuple[float, float]:
    """(median of config / reference per pair, median reference wall ns)."""
    ratios, references = [], []
    for _ in range(pairs):
        reference_ns, _ = timed(reference)
        step_ns, _ = timed(step)
        ratios.append(step_ns / reference_ns)
        references.append(reference_ns)
    return float(np.median(ratios)), float(np.median(references))


def one_pass(configs, args) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    reference = reference_step()
    for _ in range(3):
        reference()
    labels: dict[str, dict[str, float]] = {}
    paired_parts = {}
    for config_id, step in configs:
        for _ in range(args.warmup):
            step()
        labels[config_id] = contiguous(step, args.steps)
        paired_parts[config_id] = paired(step, reference, args.pairs)
    median_reference = float(np.median([ref for _, ref in paired_parts.values()]))
    for config_id, (ratio, _) in paired_parts.items():
        labels[config_id]["paired"] = ratio * median_reference
    rng = np.random.default_rng(args.seed)
    per_round: dict[str, list[np.ndarray]] = {config_id: [] for config_id, _ in configs}
    for _ in range(args.rounds):
        for index in rng.permutation(len(configs)):
            config_id, step = configs[index]
            per_round[config_id].append(np.median([timed(step) for _ in range(args.round_steps)], axis=0))
    for config_id, medians in per_round.items():
        wall, cpu = np.median(np.array(medians), axis=0)
        labels[config_id].update({"rounds": float(wall), "rounds-cpu": float(cpu)})
    pair_ratios: dict[str, list[float]] = {config_id: [] for config_id, _ in configs}
    pair_references: list[float] = []
    for _ in range(args.rounds):
        for index in rng.permutation(len(configs)):
            config_id, step = configs[index]
            ratio, reference_ns = paired(step, reference, args.round_steps)
            pair_ratios[config_id].append(ratio)
            pair_references.append(reference_ns)
    for config_id, ratios in pair_ratios.items():
        labels[config_id]["paired-rounds"] = float(np.median(ratios)) * float(np.median(pair_references))
    return [{"config_id": config_id, "protocol": protocol, "ms": values[protocol] / 1e6}
            for config_id, values in labels.items() for protocol in PROTOCOLS]


def start_load(kind: str | None, core: int) -> subprocess.Popen | None:
    if kind is None:
        return None
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if kind == "pytest":
        command = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "tests"]
    else:
        command = [sys.executable, "-c", "import torch; torch.set_num_threads(1); a = torch.randn(512, 512)\n"
                                         "while True: a @ a"]
    env = {**os.environ, "PYTHONPATH": os.path.join(here, "python") + os.pathsep + os.path.join(here, "tests")}
    return subprocess.Popen(["taskset", "-c", str(core), *command], cwd=here, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def compare(first: str, second: str) -> None:
    def read(path):
        with open(path) as handle:
            rows = list(csv.DictReader(handle))
        return {(row["config_id"], row["protocol"]): float(row["ms"]) for row in rows}

    a, b = read(first), read(second)
    print(f"{'protocol':12} {'configs':>7} {'median':>8} {'p90':>8}   pass-to-pass |b/a - 1|, drift divided out")
    for protocol in PROTOCOLS:
        keys = [key for key in a if key[1] == protocol and key in b]
        ratios = np.array([b[key] / a[key] for key in keys])
        errors = np.abs(ratios / np.median(ratios) - 1)
        print(f"{protocol:12} {len(keys):7d} {np.median(errors):8.1%} {np.percentile(errors, 90):8.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="this pass's CSV")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two passes' CSVs: print the errors")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--batch-sizes", default="2,8")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="contiguous steps (wall, cpu)")
    parser.add_argument("--pairs", type=int, default=20, help="reference/configuration pairs (paired)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="the rounds' visiting order")
    parser.add_argument("--core", type=int, default=0, help="the core this pass runs on")
    parser.add_argument("--load", choices=("pytest", "spin"), help="run this on the other core meanwhile")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    if not args.out:
        parser.error("--out (or --compare) is required")
    os.sched_setaffinity(0, {args.core})
    configs = [build(name, int(batch)) for name in args.models.split(",") for batch in args.batch_sizes.split(",")]
    load = start_load(args.load, 1 - args.core)
    started = time.time()
    try:
        rows = one_pass(configs, args)
    finally:
        if load is not None:
            load.terminate()
            load.wait()
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["config_id", "protocol", "ms"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(configs)} configurations x {len(PROTOCOLS)} protocols in {time.time() - started:.0f} s: {args.out}")


if __name__ == "__main__":
    main()
