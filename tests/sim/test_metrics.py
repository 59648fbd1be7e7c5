import pytest


def test_summary_metrics_by_hand(make_jobs, run_sim):
    # The FIFO-with-backfill scenario of test_policies: one node of 4 GPUs,
    # A(0, 2 GPUs, 100 s) 0-100, B(10, 4 GPUs, 50 s) 100-150, C(20, 2 GPUs, 30 s) 20-50.
    result, _ = run_sim(make_jobs(("A", 0, 2, 100), ("B", 10, 4, 50), ("C", 20, 2, 30)), 1, 4,
                        policy="fifo")
    summary = result.summary()
    # JCTs 100, 140, 30; queueing delays 0, 90, 0.
    assert summary["jobs"] == 3
    assert summary["avg_jct_s"] == pytest.approx(90)
    assert summary["p50_jct_s"] == pytest.approx(100)
    assert summary["p99_jct_s"] == pytest.approx(100 + 0.98 * 40)  # linear between 100 and 140
    assert summary["max_jct_s"] == 140
    # The longest-running tenth of the jobs is A (100 s), which waited for nothing: slowdown 1.
    assert summary["long_jobs_slowdown"] == pytest.approx(1.0)
    assert summary["avg_queue_s"] == pytest.approx(30)
    assert summary["p99_queue_s"] == pytest.approx(0.98 * 90)
    # Makespan 150 - 0; busy GPU-s 2x100 + 4x50 + 2x30 = 460 of 4 x 150 = 600.
    assert summary["makespan_s"] == 150
    assert summary["utilization"] == pytest.approx(460 / 600)
    assert summary["preemptions"] == 0
    # Events: 3 arrivals + 3 completions.
    assert summary["events"] == 6
    assert summary["by_gpus"] == {
        "2": {"jobs": 2, "avg_jct_s": 65.0, "p50_jct_s": 65.0, "p99_jct_s": pytest.approx(30 + 0.99 * 70),
              "avg_queue_s": 0.0},
        "4": {"jobs": 1, "avg_jct_s": 140.0, "p50_jct_s": 140.0, "p99_jct_s": 140.0, "avg_queue_s": 90.0},
    }


def test_the_long_jobs_slowdown_is_that_of_the_longest_tenth(make_jobs, run_sim):
    # One GPU, FIFO: ten 10 s jobs at t=0, then a 200 s job at t=1 that waits behind them and so runs
    # 100-300: JCT 299. Eleven jobs: the longest tenth is that one job (not the last 10 s job, JCT 100).
    jobs = [(f"s{i}", 0, 1, 10) for i in range(10)] + [("long", 1, 1, 200)]
    result, _ = run_sim(make_jobs(*jobs), 1, 1, policy="fifo")
    summary = result.summary()
    assert summary["long_jobs_slowdown"] == pytest.approx(299 / 200)
    assert summary["max_jct_s"] == 299
