"""The review: how each configuration would have done over the recent past.

A what-if from the live cluster sees the next hours, and over hours the
configurations that are best over a week differ by a percent or two, less
than any margin that keeps a tuner from switching on noise. Over a week they
differ by 10-20%, and the best static configuration of the last week is
close to the best of the next (docs/decisions.md). So once a day the tuner
replays the jobs submitted over the last week under candidate
configurations, with what is known now:

- the jobs that finished keep their real durations (the cluster saw them run);
- the unfinished ones get durations drawn, several times, from the
  forecaster's duration model given the work they have done (their real
  durations when clairvoyant);
- duration-aware policies rank each job by the estimate it arrived with.

The replay starts from an empty cluster a warm-up before the reviewed window
(the jobs of the warm-up load the cluster but are not scored), and the score
is the reviewed jobs' average JCT. The tail guard of the guarded objective
compares candidates' p99 JCT and long-job slowdown on the same replay.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np

from itercast.sched.whatif import WhatIf, rescaled, work_done_s
from itercast.sim.cluster import Cluster
from itercast.sim.workload import Workload


def past_whatif(history, live: Workload, now: float, cluster: Cluster, *, review_s: float, warmup_s: float,
                min_review_s: float, draws: int,
                draw_durations: Optional[Callable[[Workload, np.ndarray], np.ndarray]]) -> Optional[WhatIf]:
    """The last ``review_s`` of submissions of ``history`` (a tuner's
    ``History``; None when the trace so far covers less than
    ``min_review_s``) as a what-if of ``draws`` pasts scored on their average
    JCT. ``draw_durations(unfinished, work_done_s)`` gives the unfinished
    jobs' total durations; None keeps their real ones (clairvoyant)."""
    jobs, finish = history.workload, history.finish
    submitted = jobs.submit < now
    if not submitted.any():
        return None
    begin = max(float(jobs.submit[submitted].min()), now - review_s)
    if now - begin < min_review_s or not (submitted & (jobs.submit >= begin)).any():
        return None
    window = submitted & (jobs.submit >= begin - warmup_s)
    past = dataclasses.replace(jobs.subset(window), estimates=history.estimate_as_submitted(window))
    unfinished = ~(finish[window] <= now)
    if draw_durations is None or not unfinished.any():
        pasts = (past,)
    else:
        done_s = _work_done(past, live, unfinished)
        pasts = tuple(_redrawn(past, unfinished, done_s, draw_durations) for _ in range(draws))
    return WhatIf(pasts, cluster, float(past.submit.min()), np.inf, drain=True, measure_from=begin)


def _work_done(past: Workload, live: Workload, unfinished: np.ndarray) -> np.ndarray:
    """Seconds of work each unfinished job has done: from the live cluster,
    0 for a job that has not started."""
    done = dict(zip(live.job_ids, work_done_s(live)))
    return np.array([done.get(job_id, 0.0) for job_id in past.job_ids[unfinished]], dtype=np.float64)


def _redrawn(past: Workload, unfinished: np.ndarray, done_s: np.ndarray,
             draw_durations: Callable[[Workload, np.ndarray], np.ndarray]) -> Workload:
    durations = past.durations.copy()
    known = durations[unfinished]
    # A log records no duration for a job not yet finished: the same speed on every GPU type.
    known = np.where(np.isnan(known).any(axis=1, keepdims=True), 1.0, known)
    durations[unfinished], _ = rescaled(known, draw_durations(past.subset(unfinished), done_s), done_s)
    return dataclasses.replace(past, durations=durations)
