"""AutoSched alone under changed tuner settings, on some windows of an earlier evidence run: a quick check
of a setting before paying for a full evaluation.

    PYTHONPATH=python:benchmarks python3 benchmarks/autosched_probe.py --reference EVIDENCE.json \
        --window "VC 11cb48" [--window ...] --set history_s=259200 [--set NAME=VALUE ...] [--jobs N]

Each window of the reference file (benchmarks/autosched_evidence.py --json) whose name contains a
--window text is rebuilt as autosched_evidence builds it and replayed by arm (e), AutoSched with the
reference run's tuner settings changed by --set (a TunerSettings field). Prints, per window, the
reference's (e) and the probe's average and p99 JCT over the reference's (a) default and (c) hindsight.
With no --set the probe must reproduce the reference's (e): JCTs are simulated and deterministic.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import autosched_evidence as ev
from itercast.sched import AutoSched, SerialEvaluator, TunerSettings, replay


def changed_settings(recorded: dict, assignments: list[str]) -> TunerSettings:
    """The reference run's settings with each NAME=VALUE applied (VALUE read as the field's type)."""
    settings = TunerSettings(**recorded)
    fields = {field.name: field for field in dataclasses.fields(TunerSettings)}
    changes = {}
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if name not in fields or not value:
            raise SystemExit(f"--set {assignment!r}: expected NAME=VALUE with NAME one of {', '.join(fields)}")
        kind = type(getattr(settings, name))
        changes[name] = (value.lower() in ("1", "true", "yes")) if kind is bool else kind(value)
    return dataclasses.replace(settings, **changes)


def probe(task) -> dict:
    row, settings = task
    jobs, cluster, start, base, _ = ev.build({"family": "philly", **row})
    began = time.perf_counter()
    tuner = AutoSched(cluster, settings, evaluator=SerialEvaluator())
    summary = replay(jobs, cluster, base, tuner=tuner, tune_from=start, measure_from=start).summary()
    return {"window": row["window"], "avg_jct_s": summary["avg_jct_s"], "p99_jct_s": summary["p99_jct_s"],
            "switches": summary["switches"], "wall_s": time.perf_counter() - began}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, metavar="FILE", help="an autosched_evidence --json file")
    parser.add_argument("--window", action="append", required=True, metavar="TEXT",
                        help="windows whose name contains TEXT (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments")
    parser.add_argument("--jobs", type=int, default=2, help="windows replayed in parallel")
    args = parser.parse_args(argv)
    with open(args.reference) as handle:
        reference = json.load(handle)
    settings = changed_settings(reference["settings"], args.assignments)
    rows = [row for row in reference["rows"] if any(text in row["window"] for text in args.window)]
    if not rows:
        raise SystemExit(f"no window of {args.reference} matches {', '.join(args.window)}")
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        probed = list(pool.map(probe, [(row, settings) for row in rows]))
    print(f"settings changed: {', '.join(args.assignments) or 'none'}")
    print("| window | reference (e) avg / (a) | probe avg / (a) | probe avg / (c) | reference (e) p99 / (a) "
          "| probe p99 / (a) | switches (ref, probe) |\n|---|---|---|---|---|---|---|")
    for row, result in zip(rows, probed):
        a, c, e = row["default"], row["hindsight"], row["autosched"]
        print(f"| {row['window']} | {e['avg_jct_s'] / a['avg_jct_s']:.3f} | {result['avg_jct_s'] / a['avg_jct_s']:.3f} "
              f"| {result['avg_jct_s'] / c['avg_jct_s']:.3f} | {e['p99_jct_s'] / a['p99_jct_s']:.3f} "
              f"| {result['p99_jct_s'] / a['p99_jct_s']:.3f} | {e['switches']}, {result['switches']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
