// Python bindings of model rows from window rows (csrc/predict/op_rows).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>

#include "bindings/register.hpp"
#include "predict/op_rows.hpp"
#include "predict/roofline_terms.hpp"

namespace py = pybind11;

namespace itercast::bindings {
namespace {

using predict::RowLayout;
using Floats = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Indices = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

void check_shape(const py::array& a, const char* name, py::ssize_t ndim, py::ssize_t columns = -1) {
    if (a.ndim() != ndim || (columns >= 0 && a.shape(1) != columns)) {
        throw py::value_error(std::string(name) + " must be " +
                              (ndim == 1 ? "1-D" : columns >= 0 ? "2-D with " + std::to_string(columns) + " columns"
                                                                : std::string("2-D")));
    }
}

// The windows (x, index) and the (window, position) pairs, shapes checked; contents are checked natively.
struct PairsOfWindows {
    predict::WindowArrays windows;
    const std::int64_t* window;
    const std::int64_t* position;
    std::size_t pairs;
};

PairsOfWindows pairs_of_windows(const Floats& x, const Indices& index, std::size_t width, const Indices& window,
                                const Indices& position) {
    check_shape(x, "x", 2);
    check_shape(index, "index", 2, 3);
    check_shape(window, "window", 1);
    check_shape(position, "position", 1);
    if (x.shape(0) != index.shape(0)) throw py::value_error("x and index hold different numbers of windows");
    if (window.shape(0) != position.shape(0)) throw py::value_error("window and position differ in length");
    return {{x.data(), static_cast<std::size_t>(x.shape(1)), index.data(), static_cast<std::size_t>(x.shape(0)), width},
            window.data(), position.data(), static_cast<std::size_t>(window.shape(0))};
}

py::tuple iteration_totals(const Floats& x, const Indices& index, std::size_t width, const Indices& window,
                           const Indices& position, const RowLayout& layout) {
    const PairsOfWindows p = pairs_of_windows(x, index, width, window, position);
    predict::IterationTotals totals;
    {
        py::gil_scoped_release release;
        totals = predict::iteration_totals(p.windows, layout, p.window, p.position, p.pairs);
    }
    py::array_t<float> context(RowLayout::kContextColumns);
    std::copy(totals.context, totals.context + RowLayout::kContextColumns, context.mutable_data());
    return py::make_tuple(context, totals.recorded_ops);
}

py::array_t<float> op_rows(const Floats& x, const Indices& index, std::size_t width, const Indices& window,
                           const Indices& position, const RowLayout& layout, const Floats& context) {
    const PairsOfWindows p = pairs_of_windows(x, index, width, window, position);
    if (context.ndim() != 1 || context.shape(0) != static_cast<py::ssize_t>(RowLayout::kContextColumns)) {
        throw py::value_error("context must hold " + std::to_string(RowLayout::kContextColumns) + " values");
    }
    py::array_t<float> out({static_cast<py::ssize_t>(p.pairs), static_cast<py::ssize_t>(layout.columns())});
    float* data = out.mutable_data();
    {
        py::gil_scoped_release release;
        predict::op_rows(p.windows, layout, p.window, p.position, p.pairs, context.data(), data);
    }
    return out;
}

py::tuple central_pairs(const Indices& index, std::size_t width, std::size_t stride) {
    check_shape(index, "index", 2, 3);
    const predict::WindowArrays windows{nullptr, 0, index.data(), static_cast<std::size_t>(index.shape(0)), width};
    // sized only from windows known to be in order (a stray index must not size the arrays);
    // central_pairs refuses the others by name
    const bool in_order = predict::windows_in_order(windows, stride);
    const auto ops = static_cast<py::ssize_t>(in_order ? predict::ops_in_order(windows) : 0);
    py::array_t<std::int64_t> window(ops), position(ops);
    predict::central_pairs(windows, stride, window.mutable_data(), position.mutable_data());
    return py::make_tuple(window, position);
}

bool windows_in_order(const Indices& index, std::size_t width, std::size_t stride) {
    check_shape(index, "index", 2, 3);
    return predict::windows_in_order({nullptr, 0, index.data(), static_cast<std::size_t>(index.shape(0)), width},
                                     stride);
}

py::tuple roofline_terms(const Floats& x, std::size_t class_begin, std::size_t class_end, std::size_t phase_begin,
                         std::size_t phase_end, std::size_t log_flops, std::size_t log_bytes,
                         std::optional<std::size_t> log_output_bytes) {
    check_shape(x, "x", 2);
    const auto columns = static_cast<std::size_t>(x.shape(1));
    const predict::RooflineColumns at{class_begin, class_end, phase_begin, phase_end, log_flops, log_bytes,
                                      log_output_bytes};
    if (class_begin >= class_end || phase_begin >= phase_end || std::max({class_end, phase_end}) > columns ||
        std::max({log_flops, log_bytes, log_output_bytes.value_or(0)}) >= columns) {
        throw py::value_error("roofline_terms: the one-hot blocks and log columns must lie within the rows' " +
                              std::to_string(columns) + " columns, each block non-empty");
    }
    const auto rows = static_cast<py::ssize_t>(x.shape(0));
    py::array_t<std::int64_t> group(rows);
    py::array_t<double> flops(rows), bytes(rows);
    {
        py::gil_scoped_release release;
        predict::roofline_terms(x.data(), static_cast<std::size_t>(rows), columns, at, group.mutable_data(),
                                flops.mutable_data(), bytes.mutable_data());
    }
    return py::make_tuple(group, flops, bytes);
}

template <std::size_t N>
py::tuple names(const std::array<const char*, N>& values) {
    py::tuple out(N);
    for (std::size_t i = 0; i < N; ++i) out[i] = py::str(values[i]);
    return out;
}

}  // namespace

void register_rows(py::module_& m) {
    py::register_exception<predict::RowsError>(m, "RowsError", PyExc_ValueError);

    py::class_<RowLayout>(m, "RowLayout", "Where a model row's parts sit in window rows and op feature blocks")
        .def_readonly("op_features", &RowLayout::op_features)
        .def_readonly("aggregates", &RowLayout::aggregates)
        .def_readonly("class_begin", &RowLayout::class_begin)
        .def_readonly("class_end", &RowLayout::class_end)
        .def_readonly("log_flops", &RowLayout::log_flops)
        .def_readonly("log_bytes", &RowLayout::log_bytes)
        .def_readonly("optimizer_phase", &RowLayout::optimizer_phase)
        .def_readonly("log_nested_ops", &RowLayout::log_nested_ops)
        .def_property_readonly("columns", &RowLayout::columns)
        .def_property_readonly_static("neighbour_features", [](py::object) { return names(RowLayout::kNeighbourFeatureNames); },
                                      "What a row shows of the ops before and after it, in order.")
        .def_property_readonly_static("position_columns", [](py::object) { return names(RowLayout::kPositionColumnNames); },
                                      "The columns of the op's place in its window, in order.")
        .def_property_readonly_static("context_columns", [](py::object) { return names(RowLayout::kContextColumnNames); },
                                      "The columns every row of an iteration shares (its totals), in order.");
    m.def("row_layout", &predict::schema_row_layout, py::return_value_policy::copy,
          "The RowLayout of the feature schema: where model rows find their parts in window rows.");

    m.def("iteration_totals", &iteration_totals, py::arg("x"), py::arg("index"), py::arg("width"), py::arg("window"),
          py::arg("position"), py::arg("layout"),
          "(context, recorded_ops) of the ops at the (window, position) pairs, which name each op of one "
          "iteration once: log(1 + sum) of their bytes, FLOPs and optimizer-phase bytes (float32), and the "
          "ops the profiler recorded, nested ones too.");
    m.def("op_rows", &op_rows, py::arg("x"), py::arg("index"), py::arg("width"), py::arg("window"),
          py::arg("position"), py::arg("layout"), py::arg("context"),
          "(pairs, layout.columns) float32 model rows of the (window, position) pairs of windows (x, index): the "
          "op's features, the window's aggregates, the neighbour views before and after, position, window ops, "
          "position / ops, and the iteration's context.");
    m.def("windows_in_order", &windows_in_order, py::arg("index"), py::arg("width"), py::arg("stride"),
          "Whether the windows are one iteration's in order: window k starts at op k * stride, every window but "
          "the last holds width ops (false for no windows).");
    m.def("roofline_terms", &roofline_terms, py::arg("x"), py::arg("class_begin"), py::arg("class_end"),
          py::arg("phase_begin"), py::arg("phase_end"), py::arg("log_flops"), py::arg("log_bytes"),
          py::arg("log_output_bytes") = py::none(),
          "(group, flops, bytes) per model row: class index x phases + phase index (one-hot dot products, clipped "
          "to the groups), and the FLOPs and bytes its log(1 + v) columns stand for; with log_output_bytes, "
          "bytes at least the output bytes.");
    m.def("central_pairs", &central_pairs, py::arg("index"), py::arg("width"), py::arg("stride"),
          "(window, position) per op of one iteration's windows in order: the covering window where the op "
          "sits nearest the middle of the window's ops (the earlier on a tie).");
}

}  // namespace itercast::bindings
