"""Predictions while a job trains: an in-process Monitor, a trace-directory watcher, an HTTP service."""

from itercast.online.feed import TraceFeed, predict_file
from itercast.online.monitor import Monitor
from itercast.online.records import StepPrediction
from itercast.online.targets import Target, load_targets

__all__ = ["Monitor", "StepPrediction", "Target", "TraceFeed", "load_targets", "predict_file"]
