"""Which op types of a test collection no training configuration runs, and how much of each
architecture's measured op time they take: the blind set's claim to be blind, checked.

    PYTHONPATH=python python3 benchmarks/unseen_op_types.py ZOO BLIND [--cache ZOO_CACHE]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from itercast.predict.dataset import Dataset
from itercast.predict.evaluate import load_samples
from itercast.predict.hybrid import OpRegimes, measured_each_op


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("training")
    parser.add_argument("test")
    parser.add_argument("--cache", help="the training collection's featurised samples (itercast evaluate --cache)")
    args = parser.parse_args()
    training = load_samples(Dataset.from_manifest(args.training), args.cache)
    tested = load_samples(Dataset.from_manifest(args.test))
    regimes = OpRegimes.fit(training)
    by_line: dict[str, list] = defaultdict(list)
    for sample in tested:
        by_line[sample.config.line or sample.config.model].append(sample)
    print(f"{'line':12} {'configs':>7} {'new types':>9} {'time on new types':>17} {'time on unseen (+sizes)':>23}  "
          "new op types")
    for line, samples in sorted(by_line.items()):
        names = sorted({name for s in samples for name in s.op_names} - regimes.vocabulary)
        new_share, unseen_share = [], []
        for sample in samples:
            time = measured_each_op(sample).sum(axis=1)
            new = np.array([name not in regimes.vocabulary for name in sample.op_names])
            new_share.append(time[new].sum() / time.sum())
            unseen_share.append(time[regimes.unseen(sample)].sum() / time.sum())
        print(f"{line:12} {len(samples):7d} {len(names):9d} {np.mean(new_share):17.1%} {np.mean(unseen_share):23.1%}  "
              + ", ".join(names))


if __name__ == "__main__":
    main()
