"""Labeled trace collection: train a model zoo, write Kineto traces and a manifest."""

from itercast.collect.runner import collect

__all__ = ["collect"]
