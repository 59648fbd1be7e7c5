"""A real, tiny collection (a few small models, two batch sizes) shared by the predictor tests."""

from pathlib import Path

from itercast.collect import collect
from itercast.collect.measure import Protocol

MODELS = ("mlp_512x3", "gpt_nano", "squeezenet1_1", "lstm_256", "bert_tiny", "ncf")
BATCH_SIZES = (2, 8)
# Fewer steps than a real collection: tests check behaviour, not label quality.
QUICK = Protocol(warmup_steps=1, measured_steps=3, min_measured_seconds=0.0)


def make_collection(out: Path) -> Path:
    rows = collect(out, models=list(MODELS), batch_sizes=BATCH_SIZES, protocol=QUICK)
    failed = [row["config_id"] for row in rows if row["status"] != "ok"]
    assert not failed, f"tiny collection failed for {failed}"
    return out
