"""Self-configuring scheduling (AutoSched): forecasting, search space and tuner."""

from itercast.sched.estimator import DurationEstimator
from itercast.sched.evaluators import DaskEvaluator, ProcessEvaluator, SerialEvaluator, make_evaluator
from itercast.sched.forecast import HistoryReplay, SameHourLastWeek, WorkloadForecaster
from itercast.sched.replay import DEFAULT_CONFIG, ReplayResult, replay
from itercast.sched.space import SearchSpace
from itercast.sched.tuner import AutoSched, History, PrototypeTuner, Retune, TunerSettings

__all__ = [
    "AutoSched", "DEFAULT_CONFIG", "DaskEvaluator", "DurationEstimator", "History", "HistoryReplay",
    "ProcessEvaluator", "PrototypeTuner", "ReplayResult", "Retune", "SameHourLastWeek", "SearchSpace",
    "SerialEvaluator", "TunerSettings", "WorkloadForecaster", "make_evaluator", "replay",
]
