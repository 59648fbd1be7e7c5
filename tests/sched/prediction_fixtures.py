"""A small predictions CSV (as `itercast evaluate --predictions` writes) and a Sia-style workload."""

import csv

from itercast.collect.manifest import config_id
from itercast.predict.evaluate import PREDICTED_PREFIX, PREDICTION_COLUMNS
from itercast.sched.jobs import IterationTimes

# (model, batch size, measured ms, predicted ms per estimator)
CONFIGS = [
    ("resnet18", 8, 40.0, {"lightgbm": 44.0, "opbased": 30.0}),
    ("resnet18", 32, 120.0, {"lightgbm": 114.0, "opbased": 150.0}),
    ("resnet50", 32, 400.0, {"lightgbm": 380.0, "opbased": 300.0}),
    ("bert_medium", 8, 90.0, {"lightgbm": 99.0, "opbased": 60.0}),
    ("gru_512x2", 32, 70.0, {"lightgbm": 63.0, "opbased": 100.0}),
]
INPUT_SIZE = 32
FAMILIES = {"resnet18": "cnn", "resnet50": "cnn", "bert_medium": "transformer-encoder", "gru_512x2": "rnn"}


def write_predictions(path, configs=CONFIGS, hardware="cpu"):
    names = list(configs[0][3])
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(PREDICTION_COLUMNS + tuple(PREDICTED_PREFIX + name for name in names))
        for model, batch, measured, predicted in configs:
            writer.writerow([config_id(model, batch, INPUT_SIZE, "float32", hardware, 1), model, model, FAMILIES.get(model, "other"), hardware, batch, measured,
                             *(predicted[name] for name in names)])
    return path


def write_sia(path, rows):
    """rows: (time, application, replicas, global batch)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "time", "application", "num_replicas", "batch_size"])
        for i, (time, application, replicas, batch) in enumerate(rows):
            writer.writerow([f"{application}-{i}", time, application, replicas, batch])
    return path


def two_targets(tmp_path):
    """The fixture's work on "cpu" and, three times slower, on "slow" (its own configuration ids, the same
    work ids); "slow" lacks resnet50."""
    path = write_predictions(tmp_path / "a.csv")
    lines = path.read_text().splitlines()
    for line in reversed(lines[1:]):  # in another order than "cpu": aligning must match, not zip
        fields = line.split(",")
        if fields[1] == "resnet50":
            continue
        fields[0] = fields[0].replace("-cpu-t1", "-slow-t2")
        fields[4] = "slow"
        fields[6:] = [str(3 * float(v)) for v in fields[6:]]
        lines.append(",".join(fields))
    path.write_text("\n".join(lines) + "\n")
    return IterationTimes.read(path)
