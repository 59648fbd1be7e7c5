#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings/numpy_util.hpp"
#include "bindings/register.hpp"
#include "bindings/scan_session.hpp"
#include "features/timeline_windows.hpp"
#include "timeline/feature_schema.hpp"
#include "timeline/timeline.hpp"

namespace py = pybind11;

namespace itercast::bindings {

namespace {

using timeline::IterationRecord;
using timeline::OpRecord;
using timeline::TimelineBuilder;

template <class Record, class Field>
py::array column(const std::vector<Record>& records, Field Record::*field) {
    std::vector<Field> values;
    values.reserve(records.size());
    for (const Record& record : records) values.push_back(record.*field);
    return to_numpy(std::move(values));
}

template <class Record>
py::array phase_column(const std::vector<Record>& records) {
    std::vector<uint8_t> values;
    values.reserve(records.size());
    for (const Record& record : records) values.push_back(static_cast<uint8_t>(record.phase));
    return to_numpy(std::move(values));
}

py::array class_column(const std::vector<OpRecord>& records) {
    std::vector<uint8_t> values;
    values.reserve(records.size());
    for (const OpRecord& record : records) values.push_back(static_cast<uint8_t>(record.op_class));
    return to_numpy(std::move(values));
}

template <class Record>
py::array bool_column(const std::vector<Record>& records, bool Record::*field) {
    std::vector<uint8_t> values;
    for (const Record& record : records) values.push_back(record.*field ? 1 : 0);
    return to_numpy(std::move(values));
}

// Scans a trace straight into an operator timeline, and optionally its windows.
class PyTimeline : public ScanSession<TimelineBuilder> {
public:
    explicit PyTimeline(int width, int stride, std::vector<float> extra) {
        if (width > 0) windows_.emplace(features::WindowConfig{width, stride, std::move(extra)}, timeline::feature_count());
    }

    void finish() {
        finish_scan();
        py::gil_scoped_release release;
        sink_.finish();
        if (windows_) features::window_timeline(sink_, *windows_);
        finished_ = true;
    }

    // Moves the windows out: x (windows x row), y (windows x width x 2), y_sum, index (windows x 3).
    py::dict take_windows() {
        if (!windows_) throw py::value_error("this Timeline was made without windows (width=0)");
        features::WindowBuilder& w = *windows_;
        const auto count = static_cast<py::ssize_t>(w.windows());
        const auto width = static_cast<py::ssize_t>(w.config().width);
        py::dict out;
        out["x"] = to_numpy(std::move(w.x)).reshape({count, static_cast<py::ssize_t>(w.row_width())});
        out["y"] = to_numpy(std::move(w.y)).reshape({count, width, py::ssize_t{2}});
        out["y_sum"] = to_numpy(std::move(w.y_sum));
        out["index"] = to_numpy(std::move(w.index_)).reshape({count, py::ssize_t{3}});
        w.x.clear();
        w.y.clear();
        w.y_sum.clear();
        w.index_.clear();
        return out;
    }

    py::list window_columns() const {
        if (!windows_) return py::list();
        std::vector<std::string> op_names;
        for (const auto& column : timeline::feature_columns()) op_names.push_back(column.name);
        return py::cast(windows_->column_names(op_names));
    }

    py::dict ops() const {
        const auto& ops = sink_.ops();
        py::dict out;
        out["iteration"] = column(ops, &OpRecord::iteration);
        out["name"] = column(ops, &OpRecord::name);
        out["phase"] = phase_column(ops);
        out["op_class"] = class_column(ops);
        out["thread"] = column(ops, &OpRecord::thread);
        out["host_start_ns"] = column(ops, &OpRecord::host_start);
        out["host_end_ns"] = column(ops, &OpRecord::host_end);
        out["kernels"] = column(ops, &OpRecord::kernels);
        out["device_activities"] = column(ops, &OpRecord::device_activities);
        out["device_time_ns"] = column(ops, &OpRecord::device_time);
        out["device_start_ns"] = column(ops, &OpRecord::device_start);
        out["device_end_ns"] = column(ops, &OpRecord::device_end);
        out["queue_delay_ns"] = column(ops, &OpRecord::queue_delay);
        out["duration_ns"] = column(ops, &OpRecord::duration);
        out["gap_ns"] = column(ops, &OpRecord::gap);
        out["nested_ops"] = column(ops, &OpRecord::nested_ops);
        out["flops"] = column(ops, &OpRecord::flops);
        out["bytes"] = column(ops, &OpRecord::bytes);
        out["output_bytes"] = column(ops, &OpRecord::output_bytes);
        out["input_dims"] = column(ops, &OpRecord::input_dims);
        out["input_types"] = column(ops, &OpRecord::input_types);
        return out;
    }

    py::dict iterations() const {
        const auto& its = sink_.iterations();
        py::dict out;
        out["name"] = column(its, &IterationRecord::name);
        out["start_ns"] = column(its, &IterationRecord::start);
        out["duration_ns"] = column(its, &IterationRecord::duration);
        out["gpu_start_ns"] = column(its, &IterationRecord::gpu_start);
        out["gpu_end_ns"] = column(its, &IterationRecord::gpu_end);
        out["gpu_busy_ns"] = column(its, &IterationRecord::gpu_busy);
        out["kernels"] = column(its, &IterationRecord::kernels);
        out["kernels_linked"] = column(its, &IterationRecord::kernels_linked);
        out["head_ns"] = column(its, &IterationRecord::head);
        out["tail_ns"] = column(its, &IterationRecord::tail);
        out["first_op"] = column(its, &IterationRecord::first_op);
        out["op_count"] = column(its, &IterationRecord::op_count);
        out["device_timeline"] = bool_column(its, &IterationRecord::device_timeline);
        return out;
    }

    // The ops x features matrix, handed over without a copy once the timeline is finished.
    py::object features() {
        if (!features_.is_none()) return features_;
        const size_t width = timeline::feature_count();
        std::vector<float> values = finished_ ? sink_.take_features() : std::vector<float>{};
        const auto rows = static_cast<py::ssize_t>(values.size() / width);
        py::object matrix = to_numpy(std::move(values)).reshape({rows, static_cast<py::ssize_t>(width)});
        if (finished_) features_ = matrix;
        return matrix;
    }

    py::list threads() const {
        py::list out;
        for (const auto& [pid, tid, flags] : sink_.threads()) out.append(py::make_tuple(pid, tid, flags));
        return out;
    }

    int64_t kernels_total() const { return sink_.kernels_total(); }
    int64_t kernels_linked() const { return sink_.kernels_linked(); }
    int64_t kernels_unlaunched() const { return sink_.kernels_unlaunched(); }

private:
    std::optional<features::WindowBuilder> windows_;
    bool finished_ = false;
    py::object features_ = py::none();
};

}  // namespace

void register_timeline(py::module_& m) {
    m.def("canonical_op_name", [](const std::string& name) { return timeline::canonical_op_name(name); },
          "The op name the features see (autograd prefix and node version removed).");
    m.attr("FEATURE_SCHEMA_VERSION") = py::int_(timeline::kFeatureSchemaVersion);
    m.def("feature_columns", [] {
        py::list out;
        for (const auto& column : timeline::feature_columns()) out.append(py::make_tuple(column.name, column.meaning));
        return out;
    }, "(name, meaning) of each per-op feature column, in order.");

    py::class_<PyTimeline> cls(m, "Timeline", "Scans a trace into iterations and an operator sequence");
    cls.def(py::init<int, int, std::vector<float>>(), py::arg("width") = 0, py::arg("stride") = 3,
                 py::arg("extra") = std::vector<float>{},
                 "width > 0 also builds sliding windows (stride, and `extra` columns appended to each).")
        .def("take_windows", &PyTimeline::take_windows, "Move the windows out as numpy arrays.")
        .def("window_columns", &PyTimeline::window_columns, "Names of the columns of a window row.")
        .def("finish", &PyTimeline::finish, "End the stream and link the timeline.")
        .def("ops", &PyTimeline::ops, "Per-op columns (outermost ops in start order).")
        .def("iterations", &PyTimeline::iterations, "Per-iteration columns.")
        .def("features", &PyTimeline::features, "ops x features float32 matrix.")
        .def("threads", &PyTimeline::threads, "(pid, tid, string flags) per thread index.")
        .def_property_readonly("kernels_total", &PyTimeline::kernels_total)
        .def_property_readonly("kernels_linked", &PyTimeline::kernels_linked)
        .def_property_readonly("kernels_unlaunched", &PyTimeline::kernels_unlaunched);
    define_session_methods<PyTimeline>(cls);
}

}  // namespace itercast::bindings
