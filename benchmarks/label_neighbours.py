"""Labels and corrected profiled step times against their neighbours: 1 worker vs 2, idle vs beside a busy core.

``run`` collects a set of zoo configurations (default: 24 small models of every family at batch sizes 2, 8 and 32,
as benchmarks/label_floor.py) into DIR with `itercast collect`: ``--workers 1`` pinned to ``--core`` with the other
core idle or running a neighbour (``--neighbour matmul``: a 1-thread torch matmul loop, what a second worker's
arithmetic is; ``training``: a resnet18 training loop at batch 32, compute- and cache-heavy), or ``--workers 2``
(each the other's neighbour). It prints the collection's wall time.

``compare A B`` reads both with ``Dataset.from_manifest`` (what the predictor learns from) and, over the configurations
ok in both, prints per configuration and in summary (median and p90, overall and per family) how far B's label and
B's corrected profiled step time (the trace divided by the slowdown its profile saw) lie from A's, each set's common
drift (the median ratio) divided out; ``--json FILE`` writes the summary.

    PYTHONPATH=python python3 benchmarks/label_neighbours.py run /tmp/n/idle --workers 1
    PYTHONPATH=python python3 benchmarks/label_neighbours.py run /tmp/n/matmul --workers 1 --neighbour matmul
    PYTHONPATH=python python3 benchmarks/label_neighbours.py run /tmp/n/two --workers 2
    PYTHONPATH=python python3 benchmarks/label_neighbours.py compare /tmp/n/idle /tmp/n/matmul
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = ("resnet10,mobilenet_v3_small,squeezenet1_1,regnet_x_200mf,convnext_atto,vit_micro,vit_tiny,"
                  "bert_tiny,bert_mini,gpt_nano,gpt_micro,seq2seq_tiny,mlp_512x3,bn_mlp_256x4,autoencoder_512,"
                  "vae_512,lstm_256,gru_128,gru_cell_64,rnn_tanh_128x2,dlrm_small,ncf_small,deepfm_small,"
                  "two_tower_256")
NEIGHBOURS = {
    "matmul": "import torch\ntorch.set_num_threads(1)\na = torch.randn(512, 512)\nwhile True:\n    a @ a\n",
    "training": ("import sys; sys.path.insert(0, 'python')\nimport torch\nfrom itercast.collect.zoo import MODELS\n"
                 "from itercast.collect.measure import make_optimizer, training_step\ntorch.set_num_threads(1)\n"
                 "w = MODELS['resnet18'].build(32, 32)\nstep = training_step(w, make_optimizer('sgd', w.model))\n"
                 "while True:\n    step()\n"),
}


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(HERE / "python")}


def run(args) -> None:
    neighbour = None
    if args.neighbour != "none":
        neighbour = subprocess.Popen(["taskset", "-c", str(1 - args.core), sys.executable, "-c",
                                      NEIGHBOURS[args.neighbour]], cwd=HERE, env=environment(),
                                     start_new_session=True)
    cores = str(args.core) if args.workers == 1 else "0,1"
    command = ["taskset", "-c", cores, sys.executable, "-m", "itercast", "-q", "collect", "--out", args.out,
               "--models", args.models, "--batch-sizes", args.batch_sizes, "--workers", str(args.workers)]
    started = time.monotonic()
    try:
        subprocess.run(command, check=True, cwd=HERE, env=environment())
    finally:
        if neighbour is not None:
            os.killpg(neighbour.pid, signal.SIGTERM)
            neighbour.wait()
    print(f"{args.out}: collected in {time.monotonic() - started:.0f} s ({args.workers} worker(s), "
          f"neighbour {args.neighbour})")


def deviations(first: dict, second: dict) -> dict[str, float]:
    """Config id -> |second / first / drift - 1| over the ids in both; drift the median ratio."""
    common = sorted(set(first) & set(second))
    ratios = np.array([second[key] / first[key] for key in common])
    drift = float(np.median(ratios))
    return {key: abs(ratio / drift - 1) for key, ratio in zip(common, ratios)}


def summary(errors: dict[str, float], families: dict[str, str]) -> dict:
    values = np.array(list(errors.values()))
    by_family: dict[str, list[float]] = {}
    for key, value in errors.items():
        by_family.setdefault(families[key], []).append(value)
    return {"configs": len(values), "median": float(np.median(values)), "p90": float(np.percentile(values, 90)),
            "families": {family: {"configs": len(group), "median": float(np.median(group)),
                                  "p90": float(np.percentile(group, 90))}
                         for family, group in sorted(by_family.items())}}


def compare(args) -> None:
    from itercast.predict import Dataset

    first, second = (Dataset.from_manifest(path) for path in (args.first, args.second))
    families = {config.config_id: config.family for config in first.configs + second.configs}
    results = {}
    for name, field in (("label", "step_ms"), ("profiled", "profiled_step_ms")):
        a = {config.config_id: getattr(config, field) for config in first.configs}
        b = {config.config_id: getattr(config, field) for config in second.configs}
        errors = deviations(a, b)
        results[name] = summary(errors, families)
        if args.verbose:
            for key, value in sorted(errors.items(), key=lambda item: -item[1])[:15]:
                print(f"  {name:8} {key:45} {value:7.1%}")
    for name, result in results.items():
        print(f"{name:9} {result['configs']:4d} configurations: median {result['median']:.1%}, p90 {result['p90']:.1%}")
        for family, group in result["families"].items():
            print(f"    {family:22} {group['configs']:4d}  median {group['median']:6.1%}  p90 {group['p90']:6.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    collecting = commands.add_parser("run", help="collect the set")
    collecting.add_argument("out")
    collecting.add_argument("--models", default=DEFAULT_MODELS)
    collecting.add_argument("--batch-sizes", default="2,8,32")
    collecting.add_argument("--workers", type=int, choices=(1, 2), default=1)
    collecting.add_argument("--core", type=int, choices=(0, 1), default=1, help="the one worker's core")
    collecting.add_argument("--neighbour", choices=("none", *NEIGHBOURS), default="none")
    comparing = commands.add_parser("compare", help="compare two collections of the same configurations")
    comparing.add_argument("first")
    comparing.add_argument("second")
    comparing.add_argument("--json")
    comparing.add_argument("-v", "--verbose", action="store_true", help="list the 15 furthest configurations")
    args = parser.parse_args()
    run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    main()
