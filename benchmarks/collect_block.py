"""Wall time of the collector on one block of configurations, in-process (profiling, the concrete-input
merge, the trace written, the paired-rounds labels).

    PYTHONPATH=python python3 benchmarks/collect_block.py [--models gru_256,mlp_512x3,resnet18] [--batch-sizes 2,8]
        [--repeats 2]

The demo's protocol (``itercast.cli.demo.DEMO_PROTOCOL``), one thread, on the CPU; one untimed block first
(imports, allocator, caches), then ``--repeats`` timed blocks, each into a fresh folder. Run it with the
other core idle: the labels' pairing survives interference, the wall time does not.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from itercast.cli.demo import DEMO_PROTOCOL
from itercast.collect import zoo
from itercast.collect.measure import measure_block
from itercast.collect.runner import Config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="gru_256,mlp_512x3,resnet18")
    parser.add_argument("--batch-sizes", default="2,8")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    configs = [Config(zoo.MODELS[name], batch, zoo.MODELS[name].input_sizes[0], "float32", "cpu", 1)
               for name in args.models.split(",") for batch in map(int, args.batch_sizes.split(","))]
    measure_block(configs[:1], DEMO_PROTOCOL, Path(tempfile.mkdtemp()))
    for _ in range(args.repeats):
        began = time.perf_counter()
        rows = measure_block(configs, DEMO_PROTOCOL, Path(tempfile.mkdtemp()))
        print(f"{time.perf_counter() - began:.2f} s for {len(configs)} configurations "
              f"({sum(row['status'] == 'ok' for row in rows)} ok)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
