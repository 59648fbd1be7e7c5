"""The model file: a JSON document of a Predictor's settings and one entry per target hardware.

Files of every readable version load: :func:`upgrade` brings an older document to the current
version one step at a time, each step filling in what that version added with the value that
predicts as the older file did.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from itercast.errors import ItercastError
from itercast.predict.hardware_model import ANCHOR_WEIGHT, HardwareModel
from itercast.predict.hybrid import OpRegimes
from itercast.predict.lgbm import WindowLGBM
from itercast.predict.reconciliation import DEFAULT_MIN_SHARE, Calibration, HeadTail, Reconciliation
from itercast.timeline import FEATURE_SCHEMA_VERSION

MODEL_FORMAT = "itercast-model"
# 2: rows carry the iteration context (rows.CONTEXT_FEATURES), head/tail is a HeadTail model
# 3: the reconciliation scales gaps and head/tail apart from op durations (``gap_scale``)
# 4: the roofline prior's bytes are at least an op's output bytes (``roofline_bytes_from_output``)
# 5: a Calibration of the un-profiled prediction (``calibration``)
# 6: linear leaves read features within their training range (the window model's ``linear_bounds``)
# 7: the un-profiled prediction is at least a share of the profiled one (``Reconciliation.min_share``)
# 8: the hybrid pricing: each op name's training range (``regimes``), the weight of the trace's measured
#    estimate (``anchor_weight``, ``anchor_slope``) and the prediction intervals per mode (``intervals``)
MODEL_VERSION = 8


def _one_scale_for_gaps(entry: dict) -> None:
    """2 -> 3: one scale for durations and gaps, as version 2 predicted."""
    entry["reconciliation"]["gap_scale"] = entry["reconciliation"]["scale"]


def _priors_read_the_bytes_column(entry: dict) -> None:
    """3 -> 4: roofline priors read their bytes from the bytes column alone, as they were fitted."""
    entry["window_model"]["roofline_bytes_from_output"] = False


def _uncalibrated(entry: dict) -> None:
    """4 -> 5: the identity calibration."""
    entry["calibration"] = {"coefficients": [0.0, 0.0]}


def _unbounded_linear_leaves(entry: dict) -> None:
    """5 -> 6: linear leaves extrapolate without bounds."""
    entry["window_model"]["linear_bounds"] = {}


def _default_floor(entry: dict) -> None:
    """6 -> 7: un-profiled predictions floored at the default share of the profiled ones."""
    entry["reconciliation"]["min_share"] = DEFAULT_MIN_SHARE


def _names_only(entry: dict) -> None:
    """7 -> 8: every size of a seen op name counts as seen; no interval; the hybrid blend's default
    weight (structure-only pricing, the only one such a file knew, is unchanged by it)."""
    entry["regimes"] = None
    entry["anchor_weight"] = ANCHOR_WEIGHT
    entry["anchor_slope"] = 0.0
    entry["intervals"] = {}


# version -> the step that brings a hardware entry of that version to the next
UPGRADES = {2: _one_scale_for_gaps, 3: _priors_read_the_bytes_column, 4: _uncalibrated,
            5: _unbounded_linear_leaves, 6: _default_floor, 7: _names_only}
READABLE_VERSIONS = (*UPGRADES, MODEL_VERSION)


def upgrade(entry: dict, version: int) -> dict:
    """A hardware entry of a file of ``version`` (one of READABLE_VERSIONS) as the current version
    writes it (in place)."""
    for step in range(version, MODEL_VERSION):
        UPGRADES[step](entry)
    return entry


def entry_of(model: HardwareModel) -> dict:
    return {"window_model": model.window_model.to_dict(), "head_tail": asdict(model.head_tail),
            "reconciliation": asdict(model.reconciliation), "calibration": asdict(model.calibration),
            "vocabulary": sorted(model.vocabulary), "summary": model.summary,
            "regimes": model.regimes.to_dict(), "anchor_weight": model.anchor_weight,
            "anchor_slope": model.anchor_slope, "intervals": model.intervals}


def hardware_model_of(key: str, entry: dict) -> HardwareModel:
    """The HardwareModel of a current-version entry."""
    return HardwareModel(key, WindowLGBM.from_dict(entry["window_model"]), HeadTail(**entry["head_tail"]),
                         Reconciliation(**entry["reconciliation"]), set(entry["vocabulary"]),
                         entry.get("summary", {}), Calibration(**entry["calibration"]),
                         OpRegimes.from_dict(entry["regimes"]) if entry["regimes"] is not None else None,
                         float(entry["anchor_weight"]), float(entry["anchor_slope"]),
                         {mode: list(q) for mode, q in entry["intervals"].items()})


def write(path: str | os.PathLike, settings: dict, models: dict[str, HardwareModel]) -> None:
    """``settings``: the Predictor's width, stride, objective, rounds and seed."""
    document = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "feature_schema": FEATURE_SCHEMA_VERSION,
                **settings, "hardware": {key: entry_of(model) for key, model in models.items()}}
    Path(path).write_text(json.dumps(document))


def read(path: str | os.PathLike) -> tuple[dict, dict[str, HardwareModel]]:
    """(the Predictor's settings, its models per hardware key) from a model file of a readable version."""
    document = _checked_document(path)
    models = {}
    for key, entry in document["hardware"].items():
        try:
            models[key] = hardware_model_of(key, upgrade(entry, document["version"]))
        except ValueError as error:  # ModelTextError (a booster's text) or a malformed roofline
            raise ItercastError(f"{path}: target {key!r}: {error}") from None
        except (KeyError, TypeError) as error:
            raise ItercastError(f"{path}: target {key!r}: malformed entry ({type(error).__name__}: {error})") from None
    settings = {name: document[name] for name in ("width", "stride", "objective", "rounds")}
    return {**settings, "seed": document.get("seed", 0)}, models


def _checked_document(path: str | os.PathLike) -> dict:
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ItercastError(f"{path}: not a readable itercast model ({error})") from None
    if not isinstance(document, dict) or document.get("format") != MODEL_FORMAT:
        raise ItercastError(f"{path}: not an itercast model file")
    if document.get("version") not in READABLE_VERSIONS:
        raise ItercastError(f"{path}: model file version {document.get('version')}, this itercast reads "
                            f"versions {', '.join(map(str, READABLE_VERSIONS))}: retrain it")
    if document.get("feature_schema") != FEATURE_SCHEMA_VERSION:
        raise ItercastError(f"{path}: the model was trained on feature schema {document.get('feature_schema')},"
                            f" this itercast computes schema {FEATURE_SCHEMA_VERSION}: retrain it")
    return document
