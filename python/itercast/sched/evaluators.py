"""Where a re-tune's what-if simulations run: in this process, in a process
pool (the default) or on a Dask cluster.

Each evaluator opens a session per re-tune: the futures travel to the workers
once (a forked pool inherits them; Dask scatters them), then every batch of
candidate configurations sent to the session is scored there.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence

from itercast.errors import ItercastError
from itercast.sched.whatif import WhatIf
from itercast.sim.config import SimConfig

Score = Callable[[Sequence[SimConfig]], list]


class SerialEvaluator:
    workers = 1

    @contextmanager
    def session(self, whatif: WhatIf) -> Iterator[Score]:
        yield lambda configs: [whatif.score(config) for config in configs]

    def close(self) -> None:
        pass


_WHATIF: Optional[WhatIf] = None  # a pool worker's what-if for the current session


def _adopt(whatif: WhatIf) -> None:
    global _WHATIF
    _WHATIF = whatif


def _score_in_worker(config: SimConfig) -> float:
    return _WHATIF.score(config)


class ProcessEvaluator:
    """A pool of forked processes per re-tune: the futures are inherited, not
    pickled, and each candidate configuration is one small task."""

    def __init__(self, workers: Optional[int] = None):
        self.workers = max(1, workers or os.cpu_count() or 1)

    @contextmanager
    def session(self, whatif: WhatIf) -> Iterator[Score]:
        if self.workers == 1:
            with SerialEvaluator().session(whatif) as score:
                yield score
            return
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(self.workers, mp_context=context, initializer=_adopt,
                                 initargs=(whatif,)) as pool:
            yield lambda configs: list(pool.map(_score_in_worker, configs))

    def close(self) -> None:
        pass


def _score_on_dask(whatif: WhatIf, config: SimConfig) -> float:
    return whatif.score(config)


class DaskEvaluator:
    """Scores candidates on a dask.distributed cluster: the futures are
    scattered to every worker once per re-tune."""

    def __init__(self, address):
        try:
            from dask.distributed import Client
        except ImportError:
            raise ItercastError("--dask needs dask.distributed: pip install 'itercast[dask]'") from None
        self.client = address if isinstance(address, Client) else Client(address)
        self._owns_client = not isinstance(address, Client)
        self.workers = max(1, sum(self.client.nthreads().values()))

    @contextmanager
    def session(self, whatif: WhatIf) -> Iterator[Score]:
        remote = self.client.scatter(whatif, broadcast=True)
        try:
            yield lambda configs: self.client.gather(
                [self.client.submit(_score_on_dask, remote, config, pure=False) for config in configs])
        finally:
            self.client.cancel(remote)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


def make_evaluator(workers: Optional[int] = None, dask: Optional[str] = None):
    if dask:
        return DaskEvaluator(dask)
    return ProcessEvaluator(workers)
