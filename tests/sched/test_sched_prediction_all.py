"""benchmarks/sched_prediction_all.py's spread over Philly's seeded draws."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sched_prediction_all as bench  # noqa: E402


def result(ratios: dict) -> dict:
    return {"rows": [{"estimator": estimator, "policy": policy, "jct_vs_oracle": ratio}
                     for (estimator, policy), ratio in ratios.items()]}


def test_the_seeded_draws_are_summarised_as_mean_min_and_max_and_kept_out_of_the_workload_tables():
    philly = bench.PHILLY_NAME
    results = {philly: result({("lightgbm", "sjf"): 1.0, ("lightgbm", "srtf"): 1.02}),
               bench.SEEDS_KEY: {"1": result({("lightgbm", "sjf"): 1.1, ("lightgbm", "srtf"): 1.01}),
                                 "2": result({("lightgbm", "sjf"): 0.96, ("lightgbm", "srtf"): 1.03})}}
    assert [name for name, _ in bench.per_workload(results)] == [philly]
    [spread] = bench.seeded_tables(results)
    lines = spread.splitlines()
    assert lines[0].startswith("| policy (3 draws) | lightgbm |")
    assert lines[2].startswith("| sjf | 1.020 (0.960-1.100) |")
    assert lines[3].startswith("| srtf | 1.020 (1.010-1.030) |")
    assert bench.seeded_tables({philly: results[philly]}) == []


def test_the_sia_family_draws_count_the_draws_where_the_predictor_beat_both_baselines():
    def draw(own, opbased, ets):
        return result({(e, p): r for p in ("sjf", "srtf") for e, r in
                       (("lightgbm", own), ("opbased", opbased), ("ets", ets))})

    runs = {"0": draw(1.00, 1.02, 1.03), "1": draw(1.01, 1.01, 1.05), "2": draw(1.02, 1.00, 1.04)}
    results = {bench.FAMILY_KEY: {"sia-philly/workload-1": runs}}
    assert bench.per_workload(results) == []
    [table] = bench.seeded_tables(results)
    lines = table.splitlines()
    assert lines[0] == "| workload | policy | draws | lightgbm | opbased | ets | lightgbm ahead |"
    # draw 1 ties OpBased, draw 2 loses to it: one win of three
    assert lines[2] == ("| sia-philly/workload-1 | sjf | 3 | 1.010 (1.000-1.020) | 1.010 (1.000-1.020) | "
                        "1.040 (1.030-1.050) | 1 of 3 |")
    assert bench.report(results) == table  # a family-only run prints no workload table


def family_draw(own, opbased, ets=None):
    ratios = {("lightgbm", p): own for p in ("sjf", "srtf")} | {("opbased", p): opbased for p in ("sjf", "srtf")}
    if ets is not None:
        ratios |= {("ets", p): ets for p in ("sjf", "srtf")}
    return result(ratios)


def test_a_baseline_missing_from_the_family_draws_is_an_error_not_a_win():
    runs = {"0": family_draw(1.00, 1.02), "1": family_draw(1.00, 1.02)}  # ets never ran
    with pytest.raises(ValueError, match="sia-philly/workload-1, sjf: ets has a result in 0 of 2 draws"):
        bench.family_draws({"sia-philly/workload-1": runs})


def test_a_draw_missing_one_estimators_result_is_an_error_not_a_shorter_count():
    runs = {"0": family_draw(1.00, 1.02, 1.03), "1": family_draw(1.00, 1.02, 1.03),
            "2": result({("lightgbm", "sjf"): 0.9, ("lightgbm", "srtf"): 0.9})}
    with pytest.raises(ValueError, match="sia-philly/workload-1, sjf: opbased has a result in 2 of 3 draws"):
        bench.family_draws({"sia-philly/workload-1": runs})
    philly = bench.PHILLY_NAME
    results = {philly: family_draw(1.0, 1.0, 1.0), bench.SEEDS_KEY: {"1": runs["2"]}}
    with pytest.raises(ValueError, match=f"{philly}, sjf: opbased has a result in 1 of 2 draws"):
        bench.seeded_tables(results)
