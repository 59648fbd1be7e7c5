import numpy as np
import pytest

from itercast.predict.roofline import MIN_OPS_PER_GROUP, Roofline
from itercast.predict.rows import F, OP_FEATURES, window_blocks


def op_rows(op_class: str, phase: str, flops: np.ndarray, bytes_: np.ndarray) -> np.ndarray:
    x = np.zeros((len(flops), F), dtype=np.float32)
    x[:, OP_FEATURES.index(f"class={op_class}")] = 1
    x[:, OP_FEATURES.index(f"phase={phase}")] = 1
    x[:, OP_FEATURES.index("log_flops")] = np.log1p(flops)
    x[:, OP_FEATURES.index("log_bytes")] = np.log1p(bytes_)
    return x


def test_the_prior_recovers_work_proportional_durations_and_extrapolates():
    rng = np.random.default_rng(0)
    flops, bytes_ = rng.uniform(1e6, 1e8, 200), rng.uniform(1e4, 1e6, 200)
    x = op_rows("matmul", "forward", flops, bytes_)
    duration_ns = (5.0 + flops / 1e5 + bytes_ / 1e4) * 1e3  # 5 µs + 100 GFLOP/s + 10 GB/s
    prior = Roofline.fit(x, duration_ns)
    np.testing.assert_allclose(prior.predict_ns(x), duration_ns, rtol=2e-3)
    # Ten times the largest training op: ten times the time, where trees would stop at the largest label.
    big = op_rows("matmul", "forward", np.array([1e9]), np.array([1e7]))
    assert prior.predict_ns(big)[0] == pytest.approx((5.0 + 1e4 + 1e3) * 1e3, rel=2e-3)


def test_groups_are_op_class_and_phase_and_small_groups_get_no_prior():
    flops = np.full(50, 1e7)
    forward = op_rows("conv", "forward", flops, flops)
    backward = op_rows("conv", "backward", flops, flops)
    few = op_rows("pool", "forward", flops[: MIN_OPS_PER_GROUP - 1], flops[: MIN_OPS_PER_GROUP - 1])
    x = np.vstack([forward, backward, few])
    duration_ns = np.concatenate([np.full(50, 100e3), np.full(50, 200e3), np.full(len(few), 50e3)])
    prior = Roofline.fit(x, duration_ns)
    predicted = prior.predict_ns(x)
    np.testing.assert_allclose(predicted[:100], duration_ns[:100], rtol=1e-3)
    assert np.all(predicted[100:] == 0)


def test_an_op_without_operand_bytes_counts_its_output_bytes():
    """Autograd nodes the trace gives no operands for (bytes 0) still write their outputs: the prior
    scales with those, and an op's own bytes count when larger."""
    from itercast.predict.roofline import terms

    table_bytes = np.linspace(1e6, 1.2e7, 40)  # dense gradients of embedding tables up to 12 MB
    x = op_rows("embedding", "backward", np.zeros(40), np.zeros(40))
    x[:, OP_FEATURES.index("log_output_bytes")] = np.log1p(table_bytes)
    duration_ns = (20.0 + table_bytes / 3e3) * 1e3  # 20 µs + 3 GB/s
    bigger = x[-1:].copy()
    bigger[:, OP_FEATURES.index("log_output_bytes")] = np.log1p(4.8e7)  # a table 4x any in training
    prior = Roofline.fit(x, duration_ns)
    assert prior.bytes_from_output
    assert prior.predict_ns(bigger)[0] == pytest.approx((20.0 + 4.8e7 / 3e3) * 1e3, rel=1e-2)
    flat = Roofline.fit(x, duration_ns, bytes_from_output=False)  # model files before version 4
    assert flat.predict_ns(bigger)[0] < 2 * duration_ns.max()
    both = op_rows("matmul", "forward", np.zeros(2), np.array([5e6, 0.0]))
    both[:, OP_FEATURES.index("log_output_bytes")] = np.log1p(1e6)
    np.testing.assert_allclose(terms(both, bytes_from_output=True)[2], [5e6, 1e6], rtol=1e-6)
    np.testing.assert_allclose(terms(both)[2], [5e6, 0.0], rtol=1e-6)


def test_coefficients_round_trip_and_a_wrong_shape_is_refused():
    x = op_rows("matmul", "forward", np.linspace(1e6, 1e8, 20), np.linspace(1e4, 1e6, 20))
    prior = Roofline.fit(x, np.linspace(1e4, 1e6, 20))
    again = Roofline.from_list(prior.to_list())
    np.testing.assert_array_equal(again.predict_ns(x), prior.predict_ns(x))
    assert again.bytes_from_output and not Roofline.from_list(prior.to_list(), False).bytes_from_output
    with pytest.raises(ValueError, match="shape"):
        Roofline.from_list([[1.0, 2.0, 3.0]])


def with_work_scaled(sample, factor: float):
    """The sample with every op's FLOPs and bytes multiplied by ``factor`` (in its windows' op blocks)."""
    import dataclasses

    windows = sample.windows
    x = windows.x.copy()
    blocks = x[:, : windows.width * (F + 1)].reshape(len(x), windows.width, F + 1)
    for name in ("log_flops", "log_bytes"):
        column = blocks[:, :, 1 + OP_FEATURES.index(name)]
        column[:] = np.where(column > 0, np.log1p(np.expm1(column) * factor), 0)
    x[:, : windows.width * (F + 1)] = blocks.reshape(len(x), -1)
    return dataclasses.replace(sample, windows=dataclasses.replace(windows, x=x))


def with_roofline_labels(sample, rng: np.random.Generator):
    """The sample with its measured op times replaced by seeded ones that follow a roofline.

    Each op takes 4 µs + its FLOPs at 20 GFLOP/s + its bytes at 20 GB/s, times log-normal noise
    (sigma 0.2) drawn once per op, and is followed by a 2.5 µs gap: like the measured times of
    these tiny ops (median ~5 µs, gaps ~2.6 µs), mostly fixed cost. The tiny collection's
    structure (op kinds, shapes, FLOPs, bytes, windows) is real; its measured times vary from
    run to run, and so did the prior fitted on them (growth 2.25 once in ~16 runs).
    """
    import dataclasses

    windows = sample.windows
    blocks = window_blocks(windows)
    flops = np.expm1(blocks[:, :, 1 + OP_FEATURES.index("log_flops")].astype(np.float64))
    bytes_ = np.expm1(blocks[:, :, 1 + OP_FEATURES.index("log_bytes")].astype(np.float64))
    ops = windows.index[:, 1:2] + np.arange(windows.width)  # each op's position in its iteration
    noise = rng.lognormal(0.0, 0.2, int(ops.max()) + 1)[ops]  # one draw per op, whichever window holds it
    y = np.zeros_like(windows.y)
    y[..., 0] = (4e3 + flops / 20.0 + bytes_ / 20.0) * noise  # ns
    y[..., 1] = 2.5e3
    y[~windows.mask] = 0.0
    return dataclasses.replace(sample, windows=dataclasses.replace(windows, y=y, y_sum=y.sum((1, 2))))


def test_window_models_extrapolate_to_larger_ops_only_with_the_prior(tiny_collection):
    pytest.importorskip("lightgbm")
    from itercast.predict import Dataset, featurise
    from itercast.predict.lgbm import WindowLGBM

    rng = np.random.default_rng(0)
    samples = [with_roofline_labels(sample, rng) for sample in featurise(Dataset.from_manifest(tiny_collection).configs)]
    largest = max(samples, key=lambda s: s.windows.y[..., 0].max())  # it holds the longest op
    bigger = with_work_scaled(largest, 100.0)
    growth = {}
    for roofline in (True, False):
        model = WindowLGBM(rounds=40, roofline=roofline).fit(samples)
        before, after = model.predict_op_time([largest, bigger])
        growth[roofline] = after / before
    assert growth[True] > 3.0  # 100x the work: much longer, though gaps and fixed costs do not scale
    assert growth[False] < 2.0  # trees alone stop at the largest durations they were trained on


def test_terms_read_each_rows_group_flops_and_bytes():
    """The native terms against a plain reading: group = class index x 3 + phase index (argmax of the
    one-hots, 0 where a block is all zero), FLOPs and bytes from their log(1 + v) columns."""
    from itercast.predict.roofline import GROUPS, terms
    from itercast.predict.rows import CLASS_COLUMNS

    rng = np.random.default_rng(2)
    classes = [name.split("=", 1)[1] for name in OP_FEATURES if name.startswith("class=")]
    phases = ["forward", "backward", "optimizer"]
    parts = [op_rows(c, p, rng.integers(0, 10**9, 5).astype(float), rng.integers(0, 10**7, 5).astype(float))
             for c in classes for p in phases]
    x = np.vstack(parts + [np.zeros((2, F), dtype=np.float32)])  # and two rows with no class or phase
    x = np.hstack([x, rng.normal(size=(len(x), 7)).astype(np.float32)])  # model rows run on past the op block
    group, flops, bytes_ = terms(x)
    hot = lambda block: np.where(block.any(axis=1), block.argmax(axis=1), 0)  # noqa: E731
    phase_columns = [OP_FEATURES.index(f"phase={p}") for p in phases]
    expected = hot(x[:, CLASS_COLUMNS]) * 3 + hot(x[:, phase_columns])
    np.testing.assert_array_equal(group, expected)
    assert set(group[:-2]) == set(range(GROUPS)) and list(group[-2:]) == [0, 0]
    np.testing.assert_allclose(flops, np.expm1(x[:, OP_FEATURES.index("log_flops")].astype(float)), rtol=1e-12)
    np.testing.assert_allclose(bytes_, np.expm1(x[:, OP_FEATURES.index("log_bytes")].astype(float)), rtol=1e-12)
    with pytest.raises(ValueError, match="within the rows' 10 columns"):
        terms(x[:, :10])
    from itercast import _native
    from itercast.predict.roofline import _TERM_COLUMNS

    with pytest.raises(ValueError, match=f"within the rows' {x.shape[1]} columns"):
        _native.roofline_terms(x, *_TERM_COLUMNS, x.shape[1])  # the output bytes column past the row
