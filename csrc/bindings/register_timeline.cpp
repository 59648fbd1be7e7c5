#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/numpy_util.hpp"
#include "bindings/register.hpp"
#include "bindings/scan_session.hpp"
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

template <class Record>
py::array bool_column(const std::vector<Record>& records, bool Record::*field) {
    std::vector<uint8_t> values;
    for (const Record& record : records) values.push_back(record.*field ? 1 : 0);
    return to_numpy(std::move(values));
}

// Scans a trace straight into an operator timeline.
class PyTimeline : public ScanSession<TimelineBuilder> {
public:
    void finish() {
        finish_scan();
        py::gil_scoped_release release;
        sink_.finish();
    }

    py::dict ops() const {
        const auto& ops = sink_.ops();
        py::dict out;
        out["iteration"] = column(ops, &OpRecord::iteration);
        out["name"] = column(ops, &OpRecord::name);
        out["phase"] = phase_column(ops);
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

    py::array features() const {
        const size_t width = timeline::feature_count();
        std::vector<float> copy = sink_.features();
        const auto rows = static_cast<py::ssize_t>(copy.size() / width);
        return to_numpy(std::move(copy)).reshape({rows, static_cast<py::ssize_t>(width)});
    }

    py::list threads() const {
        py::list out;
        for (const auto& [pid, tid, flags] : sink_.threads()) out.append(py::make_tuple(pid, tid, flags));
        return out;
    }

    int64_t kernels_total() const { return sink_.kernels_total(); }
    int64_t kernels_linked() const { return sink_.kernels_linked(); }
    int64_t kernels_unlaunched() const { return sink_.kernels_unlaunched(); }
};

}  // namespace

void register_timeline(py::module_& m) {
    m.def("feature_columns", [] {
        py::list out;
        for (const auto& column : timeline::feature_columns()) out.append(py::make_tuple(column.name, column.meaning));
        return out;
    }, "(name, meaning) of each per-op feature column, in order.");

    py::class_<PyTimeline> cls(m, "Timeline", "Scans a trace into iterations and an operator sequence");
    cls.def(py::init<>())
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
