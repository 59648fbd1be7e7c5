"""A hand-made trace whose timeline is worked out on paper."""

import json

import numpy as np
import pytest

from itercast.timeline import FEATURE_COLUMNS, read_timeline


def x(name, cat, ts, dur, tid=1, pid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(ts, dur, correlation):
    return x("k", "kernel", ts, dur, tid=7, pid=0, correlation=correlation, stream=7)


def launch(ts, correlation, tid=1):
    return x("cudaLaunchKernel", "cuda_runtime", ts, 5, tid=tid, correlation=correlation)


# Host events first, then GPU events, as Kineto writes them (times in us).
EVENTS = [
    x("ProfilerStep#1", "user_annotation", 0, 1000),
    x("aten::linear", "cpu_op", 10, 90, **{"Input Dims": [[32, 128], [64, 128], [64]],
                                           "Input type": ["float", "float", "float"]}),
    x("aten::addmm", "cpu_op", 20, 70, **{"Input Dims": [[64], [32, 128], [128, 64]]}),
    x("aten::relu", "cpu_op", 110, 40, **{"Input Dims": [[32, 64]], "Input type": ["c10::BFloat16"]}),
    x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 200, 100, tid=2,
      **{"Fwd thread id": 1, "Sequence number": 4}),
    x("Optimizer.step#SGD.step", "user_annotation", 400, 100),
    launch(30, 1), launch(120, 2), launch(210, 3, tid=2), launch(410, 4), launch(420, 5),
    kernel(50, 30, 1), kernel(130, 30, 2), kernel(220, 40, 3), kernel(420, 20, 4), kernel(445, 5, 5),
    kernel(2000, 5, 99),  # launched before the trace: no runtime call
]


@pytest.fixture(scope="module")
def timeline():
    return read_timeline(json.dumps({"traceEvents": EVENTS}).encode())


def test_outermost_ops_in_order_with_phases(timeline):
    names = list(timeline.op_names())
    assert names == ["aten::linear", "aten::relu", "autograd::engine::evaluate_function: AddmmBackward0",
                     "Optimizer.step#SGD.step"]
    assert timeline.ops["phase"].tolist() == [0, 0, 1, 2]
    assert timeline.ops["nested_ops"].tolist() == [1, 0, 0, 0]


def test_kernels_link_through_nesting_threads_and_annotations(timeline):
    assert timeline.ops["kernels"].tolist() == [1, 1, 1, 2]
    assert (timeline.kernels_total, timeline.kernels_linked, timeline.kernels_unlaunched) == (6, 5, 1)
    assert timeline.ops["queue_delay_ns"].tolist() == [20_000, 10_000, 10_000, 10_000 + 25_000]


def test_labels_worked_out_by_hand(timeline):
    us = 1000
    assert (timeline.ops["duration_ns"] // us).tolist() == [30, 30, 40, 30]
    assert (timeline.ops["gap_ns"] // us).tolist() == [50, 60, 160, 0]
    (it,) = timeline.iterations
    assert (it.head_ns, it.tail_ns, it.dur_ns) == (50 * us, 550 * us, 1000 * us)
    assert it.gpu_busy_ns == 125 * us and (it.kernels, it.kernels_linked) == (5, 5)
    assert it.device_timeline


def test_flops_from_own_formula_not_double_counted(timeline):
    assert timeline.ops["flops"][0] == 2 * 32 * 128 * 64
    assert timeline.ops["bytes"][0] == (32 * 128 + 64 * 128 + 64) * 4
    assert timeline.ops["flops"][1] == 32 * 64  # elementwise: one per element
    assert timeline.ops["bytes"][1] == 32 * 64 * 2  # bfloat16


def test_cpu_only_trace_labels_from_host_times():
    events = [x("ProfilerStep#3", "cpu_op", 0, 100), x("aten::mm", "cpu_op", 10, 20),
              x("aten::add", "cpu_op", 40, 10), x("aten::view", "cpu_op", 45, 2)]
    timeline = read_timeline(json.dumps(events).encode())
    (it,) = timeline.iterations
    assert not it.device_timeline
    assert list(timeline.op_names()) == ["aten::mm", "aten::add"]
    assert (timeline.ops["duration_ns"] // 1000).tolist() == [20, 10]
    assert (timeline.ops["gap_ns"] // 1000).tolist() == [10, 0]
    assert (it.head_ns // 1000, it.tail_ns // 1000) == (10, 50)


def test_no_profiler_step_means_one_iteration_over_the_trace():
    timeline = read_timeline(json.dumps([x("aten::mm", "cpu_op", 5, 20), x("aten::add", "cpu_op", 40, 10)]).encode())
    (it,) = timeline.iterations
    assert (it.name, it.start_ns, it.dur_ns) == ("(whole trace)", 5000, 45000)


def test_convolution_flops_use_stride_and_padding_from_concrete_inputs():
    conv = x("aten::conv2d", "cpu_op", 10, 50, **{
        "Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []],
        "Input type": ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]})
    backward = x("aten::convolution_backward", "cpu_op", 100, 80, **{
        "Input Dims": [[8, 16, 16, 16], [8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []]})
    timeline = read_timeline(json.dumps([conv, backward]).encode())
    # output 16 x 16 = (32 + 2*1 - 1*(3-1) - 1) // 2 + 1 per side
    assert timeline.ops["flops"][0] == 2 * 8 * (16 * 3 * 3 * 3) * 16 * 16
    assert timeline.ops["flops"][1] == 2 * 2 * 8 * (16 * 3 * 3 * 3) * 16 * 16


@pytest.mark.parametrize("name, grad_output_first", [
    ("aten::convolution_backward", True), ("aten::cudnn_convolution_backward", False),
    ("aten::miopen_convolution_backward", False), ("aten::mkldnn_convolution_backward", False)])
def test_a_convolution_backward_is_costed_by_its_own_operand_order(name, grad_output_first):
    """Older releases' cuDNN/MIOpen/oneDNN backward ops take (input, grad_output, weight): read as
    (grad_output, input, weight), or as a forward convolution whose weight is the gradient, a 2021
    ResNet-50 stem's backward came to 82 TFLOP, 5,000x its work. Under an autograd node, the node
    takes the op's cost; the _input/_weight pieces (sizes as int lists) have none of their own."""
    grad, image, weight = [32, 64, 112, 112], [32, 3, 224, 224], [64, 3, 7, 7]
    tensors = [grad, image, weight] if grad_output_first else [image, grad, weight]
    node = x("autograd::engine::evaluate_function: CudnnConvolutionBackward", "cpu_op", 0, 100,
             **{"Input Dims": [grad], "Input type": ["float"]})
    pieces = [x("aten::cudnn_convolution_backward_input", "cpu_op", 2, 30, **{"Input Dims": [[], grad, weight]}),
              x("aten::cudnn_convolution_backward_weight", "cpu_op", 40, 30, **{"Input Dims": [[], grad, image]})]
    op = x(name, "cpu_op", 1, 90, **{"Input Dims": tensors + [[]] * 8, "Input type": ["float"] * 3 + [""] * 8})
    timeline = read_timeline(json.dumps([node, op, *pieces]).encode())
    assert len(timeline.ops["flops"]) == 1  # the node is the op; what it runs is nested in it
    assert timeline.ops["flops"][0] == 2 * 2 * 32 * (64 * 3 * 7 * 7) * 112 * 112
    assert timeline.ops["output_bytes"][0] == 4 * (32 * 3 * 224 * 224 + 64 * 3 * 7 * 7)  # grad input, grad weight
    lone = read_timeline(json.dumps([pieces[0]]).encode())
    assert lone.ops["flops"][0] == 0  # no formula: not a forward convolution of [] by the gradient


@pytest.mark.parametrize("name", ["aten::dropout", "aten::feature_dropout", "aten::alpha_dropout"])
def test_a_dropout_with_p_zero_costs_nothing(name):
    """aten::dropout returns its input untouched when p is 0 (Hugging Face's Dropout(0.0) layers); any
    other p, or a p the trace does not give, is costed as an activation over the input."""
    def dropout(ts, p):
        concrete = {} if p is None else {"Concrete Inputs": ["", p, "True"]}
        return x(name, "cpu_op", ts, 5, **{"Input Dims": [[8, 17, 192], [], []],
                                          "Input type": ["float", "Scalar", "Scalar"], **concrete})

    timeline = read_timeline(json.dumps([dropout(0, "0."), dropout(10, "0.0"), dropout(20, "0.10000000000000001"),
                                         dropout(30, "0.5"), dropout(40, None)]).encode())
    numel = 8 * 17 * 192
    assert list(timeline.ops["flops"]) == [0, 0, numel, numel, numel]
    assert list(timeline.ops["bytes"]) == [0, 0, 4 * numel, 4 * numel, 4 * numel]


def test_attention_is_costed_by_the_kernel_nested_in_it():
    """scaled_dot_product_attention and its math fallback take their cost from what they nest: a
    flash kernel reads Q, K and V; the math path (bmm, softmax, bmm) also writes and reads the
    (B, H, L, S) attention matrix. The same call, two kernels, two costs."""
    qkv = {"Input Dims": [[8, 3, 17, 64], [8, 3, 17, 64], [8, 3, 17, 64]], "Input type": ["float"] * 3}
    scores = [8, 3, 17, 17]
    flash = [x("aten::scaled_dot_product_attention", "cpu_op", 0, 100, **qkv),
             x("aten::_scaled_dot_product_flash_attention_for_cpu", "cpu_op", 1, 98, **qkv)]
    math = [x("aten::scaled_dot_product_attention", "cpu_op", 0, 100, **qkv),
            x("aten::_scaled_dot_product_attention_math", "cpu_op", 1, 98, **qkv),
            x("aten::matmul", "cpu_op", 2, 20, **{"Input Dims": [[8, 3, 17, 64], [8, 3, 64, 17]]}),
            x("aten::_softmax", "cpu_op", 30, 20, **{"Input Dims": [scores, [], []]}),
            x("aten::matmul", "cpu_op", 60, 20, **{"Input Dims": [scores, [8, 3, 17, 64]]})]
    qkv_elements = 3 * 8 * 3 * 17 * 64
    flash_timeline, math_timeline = (read_timeline(json.dumps(events).encode()) for events in (flash, math))
    assert flash_timeline.ops["flops"][0] == 4 * 8 * 3 * 17 * 64 * 17  # the flash kernel's own formula
    assert flash_timeline.ops["bytes"][0] == 4 * qkv_elements
    matmuls = 2 * (2 * 8 * 3 * 17 * 64 * 17)
    assert math_timeline.ops["flops"][0] == matmuls + 5 * 8 * 3 * 17 * 17
    score_elements = 8 * 3 * 17 * 17
    assert math_timeline.ops["bytes"][0] == 4 * (2 * 8 * 3 * 17 * 64 + score_elements + score_elements + 8 * 3 * 17 * 64)


def test_output_bytes_count_the_tensors_an_op_creates():
    """A 2-row weight gradient reads little and writes a whole weight: the bytes an op creates are
    counted apart from those it reads, summed over what an autograd node nests; views and in-place
    ops create none; a filling factory creates its size argument in its dtype."""
    rows, width = 2, 512
    weight_gradient = [
        x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 0, 100),
        x("AddmmBackward0", "cpu_op", 1, 98, **{"Input Dims": [[rows, width]], "Input type": ["float"]}),
        x("aten::t", "cpu_op", 2, 1, **{"Input Dims": [[width, width]], "Input type": ["float"]}),
        x("aten::mm", "cpu_op", 4, 10, **{"Input Dims": [[rows, width], [width, width]],
                                          "Input type": ["float", "float"]}),
        x("aten::mm", "cpu_op", 20, 70, **{"Input Dims": [[width, rows], [rows, width]],
                                           "Input type": ["float", "float"]}),
        x("aten::add_", "cpu_op", 200, 10, **{"Input Dims": [[width, width], [width, width], []],
                                              "Input type": ["float", "float", "Scalar"]}),
        x("aten::zeros", "cpu_op", 300, 10, **{"Input Dims": [[], [], []], "Concrete Inputs": ["[1000, 32]", "6", "0"],
                                               "Input type": ["ScalarList", "Scalar", "Scalar"]}),
        x("aten::new_zeros", "cpu_op", 400, 10, **{"Input Dims": [[8, 3], [], []],
                                                   "Concrete Inputs": ["", "[10, 7]", "15"],
                                                   "Input type": ["float", "ScalarList", "Scalar"]}),
    ]
    timeline = read_timeline(json.dumps(weight_gradient).encode())
    assert timeline.ops["output_bytes"].tolist() == [4 * (rows * width + width * width), 0, 4 * 1000 * 32, 2 * 10 * 7]
    assert timeline.ops["bytes"][0] == 4 * (width * width + rows * width + width * width + 2 * rows * width)
    column = [name for name, _ in FEATURE_COLUMNS].index("log_output_bytes")
    assert timeline.features[0, column] == pytest.approx(np.log1p(4 * (rows * width + width * width)))


def test_an_autograd_nodes_shapes_are_the_operands_of_what_it_runs():
    """The node records only the output gradient; the weight's shape is on the matrix product it runs
    (the first nested op with two tensor operands), and that op's shapes are the node's."""
    node = [x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 0, 100),
            x("AddmmBackward0", "cpu_op", 1, 98, **{"Input Dims": [[2, 64]], "Input type": ["float"]}),
            x("aten::t", "cpu_op", 2, 1, **{"Input Dims": [[64, 32]], "Input type": ["float"]}),
            x("aten::mm", "cpu_op", 4, 10, **{"Input Dims": [[2, 64], [64, 32]], "Input type": ["float", "float"]}),
            x("aten::mm", "cpu_op", 20, 70, **{"Input Dims": [[64, 2], [2, 32]], "Input type": ["float", "float"]}),
            x("aten::relu", "cpu_op", 200, 10, **{"Input Dims": [[2, 64]], "Input type": ["float"]})]
    timeline = read_timeline(json.dumps(node).encode())
    assert [timeline.strings[i] for i in timeline.ops["input_dims"]] == ["[[2, 64], [64, 32]]", "[[2, 64]]"]
    columns = [name for name, _ in FEATURE_COLUMNS]
    weight = timeline.features[0, [columns.index("in1_dim2"), columns.index("in1_dim3")]]
    assert weight.tolist() == pytest.approx(np.log1p([64, 32]).tolist())


def test_recurrent_flops_count_tokens_times_parameters():
    lstm = x("aten::lstm", "cpu_op", 0, 100, **{
        "Input Dims": [[20, 4, 32], [[1, 4, 64], [1, 4, 64]], [[256, 32], [256, 64], [256], [256]]]})
    timeline = read_timeline(json.dumps([lstm]).encode())
    assert timeline.ops["flops"][0] == 2 * 20 * 4 * (256 * 32 + 256 * 64 + 256 + 256)


def test_a_recurrent_layers_backward_is_costed_from_its_weights_not_its_output_gradient():
    """MkldnnRnnLayerBackward0 records only the output gradient (seq, batch, hidden); the layer
    backward nested in it has the weights, which say the input (128) is narrower than the hidden
    state (256): twice the forward's 2 x tokens x (w_ih + w_hh)."""
    events = [x("ProfilerStep#1", "user_annotation", 0, 200),
              x("MkldnnRnnLayerBackward0", "cpu_op", 1, 100, **{"Input Dims": [[32, 2, 256], [], []]}),
              x("aten::mkldnn_rnn_layer_backward", "cpu_op", 5, 90, **{
                  "Input Dims": [[32, 2, 128], [1024, 128], [1024, 256], [1024], [1024], [2, 256], [2, 256],
                                 [32, 2, 256], [2, 256], [2, 256], [32, 2, 256], [], [], []]})]
    timeline = read_timeline(json.dumps(events).encode())
    assert timeline.ops["flops"][0] == 4 * 32 * 2 * (1024 * 128 + 1024 * 256)


@pytest.mark.parametrize("name, hidden_state, gates", [
    ("aten::lstm_cell", [[8, 128], [8, 128]], 512), ("aten::gru_cell", [8, 128], 384)])
def test_a_recurrent_cell_is_one_matrix_product_per_time_step(name, hidden_state, gates):
    """nn.LSTMCell / nn.GRUCell stepped from Python: input [8, 64], weights [G, 64] and [G, 128]."""
    cell = x(name, "cpu_op", 0, 100, **{"Input Dims": [[8, 64], hidden_state, [gates, 64], [gates, 128],
                                                       [gates], [gates]]})
    timeline = read_timeline(json.dumps([cell]).encode())
    classes = [name.removeprefix("class=") for name, _ in FEATURE_COLUMNS if name.startswith("class=")]
    assert classes[timeline.ops["op_class"][0]] == "matmul"
    assert timeline.ops["flops"][0] == 2 * 8 * (64 + 128) * gates
    assert timeline.ops["output_bytes"][0] == 4 * 8 * gates


def test_one_recurrent_layer_counts_both_weight_matrices():
    layer = x("aten::mkldnn_rnn_layer", "cpu_op", 0, 100, **{
        "Input Dims": [[32, 8, 128], [1024, 128], [1024, 256], [1024], [1024], [8, 256], [8, 256]]})
    timeline = read_timeline(json.dumps([layer]).encode())
    assert timeline.ops["flops"][0] == 2 * 32 * 8 * (1024 * 128 + 1024 * 256)


def test_an_op_without_a_formula_sums_its_nested_ops_and_takes_the_first_shapes():
    def op(name, ts, dur, **args):
        return x(name, "cpu_op", ts, dur, **args)

    events = [x("ProfilerStep#1", "user_annotation", 0, 200),
              op("autograd::engine::evaluate_function: MmBackward0", 1, 100, **{"Sequence number": 4}),
              op("MmBackward0", 5, 90),  # no formula and no shapes: its two matmuls stand for it
              op("aten::mm", 10, 30, **{"Input Dims": [[32, 128], [128, 64]]}),
              op("aten::mm", 50, 30, **{"Input Dims": [[128, 32], [32, 64]]}),
              op("aten::add_", 96, 2, **{"Input Dims": [[64], [64]]}),
              op("aten::relu", 120, 10, **{"Input Dims": [[16]]})]
    timeline = read_timeline(json.dumps(events).encode())
    assert timeline.ops["nested_ops"].tolist() == [4, 0]
    assert timeline.ops["flops"].tolist() == [2 * (2 * 32 * 128 * 64) + 64, 16]
    first_dims = timeline.strings[timeline.ops["input_dims"][0]]
    assert json.loads(first_dims) == [[32, 128], [128, 64]]
