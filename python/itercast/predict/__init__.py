"""Iteration-time prediction: datasets of labelled traces, window models, the Predictor."""

from itercast.predict.dataset import Config, Dataset, TraceSample, featurise
from itercast.predict.predictor import Prediction, Predictor

__all__ = ["Config", "Dataset", "Prediction", "Predictor", "TraceSample", "featurise"]
