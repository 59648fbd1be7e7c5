"""What the Monitor reports after each profiled step."""

from __future__ import annotations

from dataclasses import dataclass, field

from itercast.online.feed import iterations_by_target
from itercast.predict import Prediction


@dataclass(frozen=True)
class StepPrediction:
    """What the Monitor knows after one profiled training step."""

    step: int  # the training step, counted from 0 (by the caller's profiler, when it is theirs)
    predicted_ms: dict[str, float]  # per target hardware: an iteration without the profiler attached
    measured_ms: float | None  # here: median wall time of recent un-profiled iterations
    profiled_ms: float | None  # this step's own duration, under the profiler
    remaining: int | None  # iterations left after this one, when the Monitor knows the total
    unseen_op_fraction: dict[str, float] = field(default_factory=dict)

    def eta_s(self, remaining: int | None = None) -> dict[str, float]:
        """Seconds to run ``remaining`` iterations (default: those left after this step).

        One entry per target hardware, plus ``"measured"`` at this machine's measured rate.
        """
        remaining = self.remaining if remaining is None else remaining
        if remaining is None:
            return {}
        rates = dict(self.predicted_ms)
        if self.measured_ms is not None:
            rates["measured"] = self.measured_ms
        return {key: ms * remaining / 1e3 for key, ms in rates.items()}

    def to_dict(self) -> dict:
        return {"step": self.step, "predicted_ms": self.predicted_ms, "measured_ms": self.measured_ms,
                "profiled_ms": self.profiled_ms, "remaining": self.remaining, "eta_s": self.eta_s(),
                "unseen_op_fraction": self.unseen_op_fraction}

    def describe(self) -> str:
        """One log line."""
        eta = self.eta_s()
        measured = f"{self.measured_ms:.2f} ms" if self.measured_ms is not None else "not yet measured"
        parts = [f"step {self.step}: here {measured}" + _eta_text(eta.get("measured"))]
        parts += [f"{key} {ms:.2f} ms" + _eta_text(eta.get(key)) for key, ms in self.predicted_ms.items()]
        return "; ".join(parts)


def _eta_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f" (ETA {hours}:{minutes:02d}:{secs:02d})"


def step_predictions(predictions: dict[str, Prediction], measured_ms: float | None,
                     total_steps: int | None, step_offset: int = 0) -> list[StepPrediction]:
    """One record per profiled step found in the trace, every target's prediction in it.

    ``step_offset``: the training step the profiler's ProfilerStep#0 was.
    """
    records = []
    unseen = {key: p.unseen_fraction for key, p in predictions.items()}
    for iteration, predicted in iterations_by_target(predictions):
        step = _step_number(iteration.name)
        if step is None:
            continue
        step += step_offset
        remaining = max(0, total_steps - step - 1) if total_steps is not None else None
        records.append(StepPrediction(step, predicted, measured_ms, iteration.measured_ms, remaining, unseen))
    return records


def _step_number(name: str) -> int | None:
    prefix, _, number = name.partition("#")
    return int(number) if prefix == "ProfilerStep" and number.isdigit() else None
