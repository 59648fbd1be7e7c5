"""The Monitor's prediction process: jobs in on stdin, step predictions out on stdout, one JSON line each.

Predicting is mostly Python and numpy; on a thread of the training process it
would hold the GIL the training loop needs between ops, slowing the steps
that follow each profiling cycle several times more than the prediction
itself costs. A separate process takes the GIL out of the picture.

The first line names the model files and hardware keys; each further line is
``{"path", "measured_ms", "total_steps", "step_offset"}`` for a trace, which
is read once and deleted. Each answer is ``{"records": [...]}`` or ``{"error": ...}``,
with ``"cpu_s"``, the CPU time the answer took.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict

from itercast.errors import ItercastError
from itercast.online.feed import predict_file
from itercast.online.records import step_predictions
from itercast.online.targets import load_targets


def answer(targets, job: dict) -> dict:
    started = time.process_time()
    result = _predict(targets, job)
    result["cpu_s"] = time.process_time() - started  # the Monitor counts it in the cost of profiling
    return result


def _predict(targets, job: dict) -> dict:
    try:
        predictions = predict_file(targets, job["path"])
    except (ItercastError, OSError) as error:
        return {"error": str(error)}
    finally:
        try:
            os.unlink(job["path"])
        except OSError:
            pass
    records = step_predictions(predictions, job["measured_ms"], job["total_steps"], job["step_offset"])
    return {"records": [asdict(record) for record in records]}


# Prediction scores models natively and never uses these; they are blocked in case an import would pull
# them in (lightgbm's does, where they are installed).
UNUSED_BY_PREDICTION = ("sklearn", "pandas", "dask")


# Predictions are background work: on a busy machine the training thread goes first.
NICENESS = 19


def main() -> None:
    os.nice(NICENESS)
    for name in UNUSED_BY_PREDICTION:
        sys.modules.setdefault(name, None)
    # Answers go to the original stdout; anything a library prints goes to stderr instead.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    setup = json.loads(sys.stdin.readline())
    targets = load_targets(setup["models"], setup["hardware"], trace_hardware=setup.get("trace_hardware"))
    for line in sys.stdin:
        answers.write(json.dumps(answer(targets, json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
