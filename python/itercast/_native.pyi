"""Type stubs for itercast._native, the C++ core (csrc/bindings)."""


from typing import Literal, Sequence

import numpy as np
import numpy.typing as npt

# ---- platform: how the module was built, and its SIMD level (csrc/platform, register_platform.cpp) ----

def build_info() -> dict[str, str]:
    """version, compiler, build_type, cxx_flags, link_flags; simd: the level in use ('avx512', 'avx2' or
    'portable'), chosen at import as the CPU's best (cpu_simd) capped by the environment variable named
    by simd_variable (ITERCAST_SIMD)."""

# ---- trace: the streaming Kineto scanner (csrc/trace, register_trace.cpp) ----

#: Value of an integer column where an event lacks the field (INT64_MIN).
MISSING: int

class ParseError(ValueError):
    """args: (message, byte offset, excerpt bytes, truncated)."""

class _ScanSession:
    """What every native reader shares (stub-only base: the native classes repeat it)."""

    def feed(self, data: bytes | bytearray | memoryview) -> None: ...
    def strings(self, start: int = 0) -> list[str]: ...
    def metadata(self) -> list[tuple[str, str]]: ...
    @property
    def bytes_fed(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def string_count(self) -> int: ...
    @property
    def complete(self) -> bool: ...
    @property
    def saw_trace_events(self) -> bool: ...

class Scanner(_ScanSession):
    """Push-based, resumable scanner accumulating events as columns."""

    def __init__(self, size_hint: int = 0) -> None: ...
    def finish(self) -> None: ...
    def take_events(self) -> dict[str, np.ndarray]: ...
    @property
    def pending(self) -> int: ...

# ---- timeline and windows (csrc/timeline, csrc/features, register_timeline.cpp) ----

def canonical_op_name(name: str) -> str: ...
FEATURE_SCHEMA_VERSION: int
def feature_columns() -> list[tuple[str, str]]: ...

class Timeline(_ScanSession):
    """Scans a trace into iterations and an op sequence; width > 0 also builds windows."""

    def __init__(self, width: int = 0, stride: int = 3, extra: list[float] = ...) -> None: ...
    def finish(self) -> None: ...
    def ops(self) -> dict[str, np.ndarray]: ...
    def iterations(self) -> dict[str, np.ndarray]: ...
    def features(self) -> npt.NDArray[np.float32]: ...
    def threads(self) -> list[tuple[int, int, int]]: ...
    def take_windows(self) -> dict[str, np.ndarray]: ...
    def window_columns(self) -> list[str]: ...
    @property
    def kernels_total(self) -> int: ...
    @property
    def kernels_linked(self) -> int: ...
    @property
    def kernels_unlaunched(self) -> int: ...

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
        live: dict[str, _npt.ArrayLike],
        config: SimConfig,
        start_time: float = ...,
        record_segments: bool = False,
        deadline: _npt.ArrayLike = ...,
        preference: _npt.ArrayLike = ...
    ) -> None: ...
    def run_until(self, until: float = ..., max_events: int = 0) -> bool: ...
    def set_config(self, config: SimConfig) -> None: ...
    def set_estimates(self, estimates: _npt.ArrayLike) -> None: ...
    def snapshot(self, include_future: bool = False) -> dict[str, _np.ndarray]: ...
    @property
    def budget_exhausted(self) -> bool: ...
    @property
    def now(self) -> float: ...
    @property
    def events(self) -> int: ...
    @property
    def unfinished(self) -> int: ...
    def outcome(self) -> dict[str, _np.ndarray]: ...
    def segments(self) -> dict[str, _np.ndarray]: ...

# ---- predict: LightGBM tree ensembles scored natively (csrc/predict, register_forest.cpp) ----
# itercast.predict.forest is the public interface to it.

class ForestError(ValueError):
    """Malformed or unsupported LightGBM model text; the message names the line."""

class Forest:
    """A single-output LightGBM model read from Booster.model_to_string() text."""

    def __init__(self, model_text: str | bytes) -> None: ...
    def predict(
        self,
        x: npt.ArrayLike,
        rows: npt.ArrayLike | None = None,
        threads: int = 1,
        raw_score: bool = True,
    ) -> npt.NDArray[np.float64]: ...
    def set_linear_bounds(self, low: Sequence[float], high: Sequence[float]) -> None:
        """Linear leaves read feature f within [low[f], high[f]] (none until set)."""
    @property
    def linear_bounds(self) -> tuple[list[float], list[float]] | None: ...
    @property
    def num_features(self) -> int: ...
    @property
    def num_trees(self) -> int: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def average_output(self) -> bool: ...
    @property
    def objective(self) -> str: ...
    @property
    def has_categorical(self) -> bool: ...
    @property
    def has_linear(self) -> bool: ...

def forest_kernel(kernel: Literal["auto", "portable"] | None = None) -> Literal["avx512", "portable"]:
    """The bit-set kernel scoring forests of <= 64-leaf trees; 'portable' forces the portable one, 'auto' picks
    AVX-512 where the SIMD level (build_info()['simd']) is AVX-512."""

# ---- predict: model rows from window rows (csrc/predict/op_rows, register_rows.cpp) ----
# itercast.predict.rows is the public interface to it.

class RowsError(ValueError):
    """A row layout that does not fit the windows, or a (window, position) pair outside them."""

class RowLayout:
    """Where a model row's parts sit in window rows and op feature blocks."""

    @property
    def op_features(self) -> int: ...
    @property
    def aggregates(self) -> int: ...
    @property
    def class_begin(self) -> int: ...
    @property
    def class_end(self) -> int: ...
    @property
    def log_flops(self) -> int: ...
    @property
    def log_bytes(self) -> int: ...
    @property
    def optimizer_phase(self) -> int: ...
    @property
    def log_nested_ops(self) -> int: ...
    @property
    def columns(self) -> int: ...
    @property
    def neighbour_features(self) -> tuple[str, ...]: ...
    @property
    def position_columns(self) -> tuple[str, ...]: ...
    @property
    def context_columns(self) -> tuple[str, ...]: ...

def row_layout() -> RowLayout:
    """The RowLayout of the feature schema (op feature columns and window aggregates)."""

def iteration_totals(
    x: npt.NDArray[np.float32],
    index: npt.NDArray[np.int64],
    width: int,
    window: npt.NDArray[np.int64],
    position: npt.NDArray[np.int64],
    layout: RowLayout,
) -> tuple[npt.NDArray[np.float32], float]: ...
def op_rows(
    x: npt.NDArray[np.float32],
    index: npt.NDArray[np.int64],
    width: int,
    window: npt.NDArray[np.int64],
    position: npt.NDArray[np.int64],
    layout: RowLayout,
    context: npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]: ...
def windows_in_order(index: npt.NDArray[np.int64], width: int, stride: int) -> bool: ...
def roofline_terms(
    x: npt.NDArray[np.float32],
    class_begin: int,
    class_end: int,
    phase_begin: int,
    phase_end: int,
    log_flops: int,
    log_bytes: int,
    log_output_bytes: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def central_pairs(
    index: npt.NDArray[np.int64], width: int, stride: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
