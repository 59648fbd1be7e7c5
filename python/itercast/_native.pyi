
# ---- sim: event-driven cluster simulator (csrc/sim, csrc/bindings/register_sim.cpp) ----
# Self-contained section; itercast.sim is the public interface to it.
import numpy as _np
import numpy.typing as _npt

class SimConfig:
    def __init__(
        self,
        policy: str,
        placement: str,
        backfill: bool,
        restart_overhead_s: float,
        lease_s: float,
        queue_thresholds_gpu_s: list[float],
        starvation_factor: float,
    ) -> None: ...

class Simulator:
    def __init__(
        self,
        pools: list[tuple[int, int]],
        submit: _npt.ArrayLike,
        gpus: _npt.ArrayLike,
        duration: _npt.ArrayLike,
        estimate: _npt.ArrayLike,
        attained_gpu_s: _npt.ArrayLike,
        done_fraction: _npt.ArrayLike,
        running: _npt.ArrayLike,
        config: SimConfig,
        start_time: float = ...,
        record_segments: bool = False,
    ) -> None: ...
    def run_until(self, until: float = ...) -> bool: ...
    def set_config(self, config: SimConfig) -> None: ...
    @property
    def now(self) -> float: ...
    @property
    def events(self) -> int: ...
    @property
    def unfinished(self) -> int: ...
    def outcome(self) -> dict[str, _np.ndarray]: ...
    def segments(self) -> dict[str, _np.ndarray]: ...
