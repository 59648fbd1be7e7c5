"""ITERCAST_SIMD caps the SIMD level the native code chooses at run time; every level computes the
same results, bit for bit, on real work: scanning vendored traces, their timelines, and forests."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import itercast
from itercast import _native
from shared_data import vendored

LEVELS = ["portable", "avx2", "avx512"]  # lowest first
TRACES = [vendored("traces/hta/trace_filter/sampled_rank-0.json.gz"),
          vendored("traces/kineto/resnet50_v100_workers0_1623143089861.pt.trace.json.gz")]

# Prints the SIMD level and a digest of each result; runs in a process of its own, as the level is
# read once, when the native module loads.
WORKLOAD = """
import hashlib, json, sys
import numpy as np
from itercast import _native
from itercast.predict.forest import NativeBooster
from itercast.timeline import read_timeline
from itercast.trace import read_trace

def digest(arrays):
    h = hashlib.sha256()
    for array in arrays:
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()

job = json.load(open(sys.argv[1]))
out = {"simd": _native.build_info()["simd"], "forest_kernel": _native.forest_kernel()}
for path in job["traces"]:
    trace = read_trace(path)
    out["scan " + path] = digest([trace.columns[k] for k in sorted(trace.columns)]) + str(trace.strings)
    timeline = read_timeline(path)
    out["timeline " + path] = digest([timeline.features] + [timeline.ops[k] for k in sorted(timeline.ops)])
x = np.load(job["rows"])
for name, model in job["models"].items():
    booster = NativeBooster(model["text"])
    if model["bounds"]:
        booster.set_linear_bounds(*model["bounds"])
    out["forest " + name] = digest([booster.predict(x, raw_score=True)])
print(json.dumps(out))
"""


def run_with_simd(level: str | None, script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(itercast.__file__).parent.parent),
                                                          os.environ.get("PYTHONPATH", "")])}
    env.pop("ITERCAST_SIMD", None)
    if level is not None:
        env["ITERCAST_SIMD"] = level
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=False)


def levels_this_cpu_runs() -> list[str]:
    return LEVELS[: LEVELS.index(_native.build_info()["cpu_simd"]) + 1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The workload's inputs: traces, rows, and boosters whose trees take every forest path."""
    lightgbm = pytest.importorskip("lightgbm")
    folder = tmp_path_factory.mktemp("simd")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 8)).astype(np.float32)
    y = 3 * x[:, 0] + np.sin(x[:, 1]) + x[:, 2] * x[:, 3]
    np.save(folder / "rows.npy", x)
    kinds = {"bit-set": dict(num_leaves=31), "linear": dict(num_leaves=31, linear_tree=True),
             "walk": dict(num_leaves=80, min_data_in_leaf=2)}  # > 64 leaves: no bit sets
    models = {}
    for name, params in kinds.items():
        booster = lightgbm.train({"objective": "regression", "verbose": -1, "num_threads": 1, "seed": 0, **params},
                                 lightgbm.Dataset(x, y), num_boost_round=20)
        bounds = [x.min(axis=0).tolist(), x.max(axis=0).tolist()] if params.get("linear_tree") else None
        models[name] = {"text": booster.model_to_string(), "bounds": bounds}
    path = folder / "job.json"
    path.write_text(json.dumps({"traces": [str(t) for t in TRACES], "rows": str(folder / "rows.npy"),
                                "models": models}))
    return path


def results(level: str | None, job: Path) -> dict:
    done = run_with_simd(level, WORKLOAD, str(job))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("level", LEVELS)
def test_every_simd_level_gives_the_same_results_bit_for_bit(job, level):
    if level not in levels_this_cpu_runs():
        pytest.skip(f"this CPU does not run {level}")
    chosen = results(None, job)
    forced = results(level, job)
    assert chosen["simd"] == _native.build_info()["cpu_simd"] and forced["simd"] == level
    assert forced["forest_kernel"] == ("avx512" if level == "avx512" else "portable")
    assert {k: v for k, v in forced.items() if " " in k} == {k: v for k, v in chosen.items() if " " in k}


def test_a_level_above_the_cpu_is_capped_at_the_cpu():
    done = run_with_simd("avx512", "from itercast import _native; print(_native.build_info()['simd'])")
    assert done.stdout.strip() == _native.build_info()["cpu_simd"]


def test_a_bad_setting_fails_the_import_naming_the_variable():
    done = run_with_simd("sse9", "import itercast._native")
    assert done.returncode != 0
    assert "ITERCAST_SIMD='sse9': expected auto, avx512, avx2 or portable" in done.stderr
