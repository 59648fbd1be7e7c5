"""Tiny workloads whose JCTs are derived by hand, one scenario per behaviour.

Times are seconds. "A 0-100" means job A holds its GPUs from t=0 to t=100.
"""

import pytest

from itercast.sim import SimConfig
from itercast.sim.estimates import duration_estimates


def by_id(result, workload, column):
    return dict(zip(workload.job_ids, getattr(result, column).tolist()))


# ---- FIFO -------------------------------------------------------------------

# One node with 4 GPUs. A(t=0, 2 GPUs, 100 s), B(t=10, 4 GPUs, 50 s), C(t=20, 2 GPUs, 30 s).
FIFO_JOBS = [("A", 0, 2, 100), ("B", 10, 4, 50), ("C", 20, 2, 30)]


def test_fifo_without_backfill_blocks_behind_the_head(make_jobs, run_sim):
    # A 0-100. B needs 4 GPUs, only 2 free: B heads the queue and C may not pass it.
    # t=100: B 100-150; t=150: C 150-180.  JCT: A 100, B 150-10=140, C 180-20=160.
    _, jct = run_sim(make_jobs(*FIFO_JOBS), 1, 4, policy="fifo", backfill=False)
    assert jct == {"A": 100, "B": 140, "C": 160}


def test_fifo_with_backfill_lets_small_jobs_pass(make_jobs, run_sim):
    # C fits the 2 free GPUs at t=20: C 20-50. B still waits for A: B 100-150.
    # JCT: A 100, B 140, C 30.
    _, jct = run_sim(make_jobs(*FIFO_JOBS), 1, 4, policy="fifo", backfill=True)
    assert jct == {"A": 100, "B": 140, "C": 30}


# ---- SJF and QSSF (non-preemptive) ------------------------------------------

# One node with 4 GPUs. A(t=0, 4 GPUs, 100 s) holds everything; then
# B(t=10, 1 GPU, 120 s) and C(t=20, 4 GPUs, 50 s) queue behind it.
SIZED_JOBS = [("A", 0, 4, 100), ("B", 10, 1, 120), ("C", 20, 4, 50)]


def test_sjf_runs_the_shortest_job_first(make_jobs, run_sim):
    # t=100: shortest pending is C (50 s): C 100-150, then B 150-270.
    # JCT: A 100, B 270-10=260, C 150-20=130.
    _, jct = run_sim(make_jobs(*SIZED_JOBS), 1, 4, policy="sjf")
    assert jct == {"A": 100, "B": 260, "C": 130}


def test_qssf_ranks_by_duration_times_gpus(make_jobs, run_sim):
    # Priorities: B 120 x 1 = 120, C 50 x 4 = 200, so B first: B 100-220;
    # C needs 4 GPUs and waits for B: C 220-270.  JCT: A 100, B 210, C 250.
    _, jct = run_sim(make_jobs(*SIZED_JOBS), 1, 4, policy="qssf")
    assert jct == {"A": 100, "B": 210, "C": 250}


def test_sjf_with_supplied_estimates_trusts_them(make_jobs, run_sim):
    # One GPU. A(0, 100 s) runs first. Supplied estimates say B (true 50 s) takes
    # 90 and C (true 20 s) takes 10, so C goes first at t=100: C 100-120, B 120-170.
    # JCT: A 100, B 170-10=160, C 120-20=100. (Oracle would give the same order;
    # swap the estimates to prove they are used: B est 10, C est 90 -> B 100-150,
    # C 150-170, JCT B 140, C 150.)
    workload = make_jobs(("A", 0, 1, 100, 100), ("B", 10, 1, 50, 10), ("C", 20, 1, 20, 90))
    _, jct = run_sim(workload, 1, 1, policy="sjf", estimate="supplied")
    assert jct == {"A": 100, "B": 140, "C": 150}


def test_noisy_estimates_stay_within_the_error_and_drive_the_order(make_jobs, run_sim):
    workload = make_jobs(("A", 0, 1, 1000), *[(f"J{i}", 1, 1, 100 + i) for i in range(8)])
    config = SimConfig(policy="sjf", estimate="noisy", estimate_error=0.5, estimate_seed=7)
    estimates = duration_estimates(workload, config)
    ratio = estimates / workload.duration
    assert ((ratio >= 0.5) & (ratio <= 1.5)).all() and not (ratio == 1).all()
    # With one GPU the queued jobs run back to back after A, shortest estimate first.
    result, _ = run_sim(workload, 1, 1, **vars(config))
    queued = list(range(1, 9))
    assert sorted(queued, key=lambda i: result.first_start[i]) == sorted(queued, key=lambda i: estimates[i])


# ---- SRTF (preemptive) --------------------------------------------------------

def test_srtf_preempts_for_a_shorter_job_and_pays_the_restart(make_jobs, run_sim):
    # One GPU, no lease, 10 s restart. A(0, 100 s); B(20, 30 s).
    # t=20: A has 80 s left > B's 30, so A is preempted; B 20-50.
    # t=50: A restarts: 10 s overhead, then 80 s of work: A 50-140.
    # JCT: A 140, B 30; A preempted once.
    result, jct = run_sim(make_jobs(("A", 0, 1, 100), ("B", 20, 1, 30)), 1, 1,
                          policy="srtf", lease_s=0, restart_overhead_s=10)
    assert jct == {"A": 140, "B": 30}
    assert by_id(result, result.workload, "preemptions") == {"A": 1, "B": 0}


def test_srtf_lease_delays_the_preemption(make_jobs, run_sim):
    # Same but a 50 s lease: A may not be preempted before t=50. At t=50 A has
    # 50 s left > B's 30: A preempted; B 50-80; A restarts 80, works 90-140.
    # JCT: A 140, B 60.
    _, jct = run_sim(make_jobs(("A", 0, 1, 100), ("B", 20, 1, 30)), 1, 1,
                     policy="srtf", lease_s=50, restart_overhead_s=10)
    assert jct == {"A": 140, "B": 60}


def test_srtf_keeps_the_running_job_when_it_is_shorter_at_lease_end(make_jobs, run_sim):
    # Lease 50: at t=50 A has 50 s left < B's 60, so A finishes at 100; B 100-160.
    result, jct = run_sim(make_jobs(("A", 0, 1, 100), ("B", 20, 1, 60)), 1, 1,
                          policy="srtf", lease_s=50, restart_overhead_s=10)
    assert jct == {"A": 100, "B": 140}
    assert result.preemptions.sum() == 0


# ---- LAS ----------------------------------------------------------------------

@pytest.mark.parametrize("overhead, jct_a", [(0, 400), (20, 420)])
def test_las_serves_the_least_attained_job_at_lease_end(make_jobs, run_sim, overhead, jct_a):
    # One GPU, 100 s lease. A(0, 250 s); B(50, 150 s).
    # t=50: A is inside its lease. t=100: A attained 100 GPU-s > B's 0:
    # A preempted, B 100-250 (at t=200 B's lease ends with 100 GPU-s, tied with
    # A; the running job keeps its GPUs). t=250: A restarts, pays the overhead
    # and runs its last 150 s: finishes at 400 + overhead.
    # JCT: A 400 + overhead, B 250-50=200.
    result, jct = run_sim(make_jobs(("A", 0, 1, 250), ("B", 50, 1, 150)), 1, 1,
                          policy="las", lease_s=100, restart_overhead_s=overhead)
    assert jct == {"A": jct_a, "B": 200}
    assert result.preemptions.tolist() == [1, 0]


def test_las_counts_attained_service_in_gpu_seconds(make_jobs, run_sim):
    # Two GPUs, no lease. A(0, 2 GPUs, 100 s), B(0, 1 GPU, 130 s), C(60, 1 GPU, 50 s).
    # t=0: A and B tie (0 GPU-s, both submitted at 0); input order puts A first:
    # A takes both GPUs, B waits.
    # t=60: attained A 120 GPU-s, B 0, C 0. Ranking B, C, A: B and C take both
    # GPUs, A is preempted with 40 s left. B 60-190, C 60-110.
    # t=110: A (120) vs B running (50): A needs 2 GPUs, only 1 free -> waits;
    # budget: B(50) keeps its GPU first, A gets nothing. t=190: B done, A
    # restarts (overhead 0) 190-230.
    # JCT: A 230, B 190, C 50.
    result, jct = run_sim(make_jobs(("A", 0, 2, 100), ("B", 0, 1, 130), ("C", 60, 1, 50)), 1, 2,
                          policy="las", lease_s=0, restart_overhead_s=0)
    assert jct == {"A": 230, "B": 190, "C": 50}
    assert result.busy_gpu_s.tolist() == [200, 130, 50]


# ---- Tiresias (discretised 2D-LAS, MLFQ) ----------------------------------------

# One GPU, queue limit 100 GPU-s, no lease, no restart overhead.
# A(0, 300 s); B(150, 100 s); C(230, 100 s).
TIRESIAS_JOBS = [("A", 0, 1, 300), ("B", 150, 1, 100), ("C", 230, 1, 100)]
TIRESIAS = dict(policy="tiresias", queues=2, queue_limits_gpu_s=(100,), lease_s=0, restart_overhead_s=0)


def test_tiresias_demotes_and_preempts(make_jobs, run_sim):
    # A runs in Q0, crosses 100 GPU-s at t=100 -> Q1. t=150: B (Q0) preempts A
    # (150 s left); B 150-250. t=230: C (Q0) arrives; B is also Q0 and running,
    # so it keeps the GPU. t=250: C (Q0) before A (Q1): C 250-350. A 350-500.
    # JCT: A 500, B 100, C 120.
    result, jct = run_sim(make_jobs(*TIRESIAS_JOBS), 1, 1, **TIRESIAS)
    assert jct == {"A": 500, "B": 100, "C": 120}
    assert result.preemptions.tolist() == [1, 0, 0]


def test_tiresias_starvation_promotion(make_jobs, run_sim):
    # Factor 0.5: A, preempted at 150 after running 150 s, is promoted to Q0 at
    # 150 + 0.5 x 150 = 225 (queue entry 225, before C's 230). t=250: A runs
    # (150 s left); it crosses 100 GPU-s since promotion at t=350 -> Q1 and C
    # preempts it (50 s left). C 350-450. A promoted again at 350 + 0.5 x 100 =
    # 400 but C is Q0 and running. A 450-500.
    # JCT: A 500, B 100, C 450-230=220; A preempted twice.
    result, jct = run_sim(make_jobs(*TIRESIAS_JOBS), 1, 1, starvation_factor=0.5, **TIRESIAS)
    assert jct == {"A": 500, "B": 100, "C": 220}
    assert result.preemptions.tolist() == [2, 0, 0]


def test_tiresias_restart_overhead_and_lease(make_jobs, run_sim):
    # Lease 120, restart 10. A is demoted at t=100 but protected until t=120.
    # t=150: B (Q0) preempts A. B 150-250. t=250: C 250-350 (C in Q0, A in Q1).
    # t=350: A restarts, 10 s overhead, 150 s of work: 350-510.
    # JCT: A 510, B 100, C 120.
    config = dict(TIRESIAS, lease_s=120, restart_overhead_s=10)
    _, jct = run_sim(make_jobs(*TIRESIAS_JOBS), 1, 1, **config)
    assert jct == {"A": 510, "B": 100, "C": 120}


def test_tiresias_lease_protects_until_it_ends(make_jobs, run_sim):
    # Lease 200: A (demoted at 100) may not be preempted before t=200; B waits
    # 150-200, then B 200-300. C (Q0, t=230) waits behind running B: C 300-400.
    # A restarts at 400 with 100 s left (overhead 0): 400-500.
    # JCT: A 500, B 150, C 170.
    _, jct = run_sim(make_jobs(*TIRESIAS_JOBS), 1, 1, **dict(TIRESIAS, lease_s=200))
    assert jct == {"A": 500, "B": 150, "C": 170}
