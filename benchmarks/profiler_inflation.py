"""The profiler's inflation of a configuration's step under each profiling protocol.

    PYTHONPATH=python python3 benchmarks/profiler_inflation.py MODEL:BATCH:SIZE [...] [--repeats N]

For each configuration, alternately with concrete inputs recorded in the timed steps (the protocol before
6a10f7b) and recorded apart (``Protocol.separate_concrete_inputs``, today's): the un-profiled step, the
profiled / un-profiled ratio, and the page faults the whole measurement took (the profiler's hold on
concrete inputs shows there first: freed tensors stay alive, new ones are faulted in fresh).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile

from itercast.collect.measure import Protocol, measure
from itercast.collect.runner import Config
from itercast.collect.zoo import MODELS


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="+", metavar="MODEL:BATCH:SIZE")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    print("| configuration | protocol | step ms | profiled / step | page faults |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as traces:
        for text in args.configs:
            model, batch, size = text.split(":")
            config = Config(MODELS[model], int(batch), int(size), "float32", "cpu", 1)
            for _ in range(args.repeats):
                for separate in (False, True):
                    before = minor_faults()
                    row = measure(config, Protocol(separate_concrete_inputs=separate), traces)
                    name = "concrete inputs apart" if separate else "in the timed steps"
                    print(f"| {config.id} | {name} | {row['step_ms']:.1f} | "
                          f"{row['profiled_step_ms'] / row['step_ms']:.3f} | {minor_faults() - before:,} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
