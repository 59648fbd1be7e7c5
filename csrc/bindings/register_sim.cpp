// Python bindings of the event-driven cluster simulator (csrc/sim).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "bindings/register.hpp"
#include "sim/simulator.hpp"

namespace py = pybind11;

namespace itercast::bindings {
namespace {

using sim::Config;
using sim::Simulator;

sim::Policy parse_policy(const std::string& name) {
    if (name == "fifo") return sim::Policy::fifo;
    if (name == "sjf") return sim::Policy::sjf;
    if (name == "srtf") return sim::Policy::srtf;
    if (name == "las") return sim::Policy::las;
    if (name == "tiresias") return sim::Policy::tiresias;
    if (name == "qssf") return sim::Policy::qssf;
    if (name == "edf") return sim::Policy::edf;
    if (name == "lst") return sim::Policy::lst;
    throw py::value_error("unknown policy '" + name + "'");
}

sim::Placement parse_placement(const std::string& name) {
    if (name == "consolidated") return sim::Placement::consolidated;
    if (name == "spread") return sim::Placement::spread;
    throw py::value_error("unknown placement '" + name + "'");
}

template <typename T>
std::vector<T> to_vector(const py::array_t<T, py::array::c_style | py::array::forcecast>& array) {
    return std::vector<T>(array.data(), array.data() + array.size());
}

template <typename T>
py::array_t<T> to_array(const std::vector<T>& values) {
    return py::array_t<T>(static_cast<py::ssize_t>(values.size()), values.data());
}

py::dict outcome_dict(const Simulator& simulator) {
    const sim::Outcome& outcome = simulator.outcome();
    py::dict result;
    result["first_start"] = to_array(outcome.first_start);
    result["finish"] = to_array(outcome.finish);
    result["preemptions"] = to_array(outcome.preemptions);
    result["busy_gpu_s"] = to_array(outcome.busy_gpu_s);
    result["last_pool"] = to_array(outcome.last_pool);
    return result;
}

// Segments flattened into columns; slices of segment i are
// slice_node/slice_gpus[slice_offset[i]:slice_offset[i + 1]].
py::dict segments_dict(const Simulator& simulator) {
    std::vector<int> job, pool, offset{0}, node, gpus;
    std::vector<double> start, end;
    for (const sim::Segment& segment : simulator.segments()) {
        job.push_back(segment.job);
        pool.push_back(segment.pool);
        start.push_back(segment.start);
        end.push_back(segment.end);
        for (const sim::Slice& slice : segment.slices) {
            node.push_back(slice.node);
            gpus.push_back(slice.gpus);
        }
        offset.push_back(static_cast<int>(node.size()));
    }
    py::dict result;
    result["job"] = to_array(job);
    result["pool"] = to_array(pool);
    result["start"] = to_array(start);
    result["end"] = to_array(end);
    result["slice_offset"] = to_array(offset);
    result["slice_node"] = to_array(node);
    result["slice_gpus"] = to_array(gpus);
    return result;
}

using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;
using Ints = py::array_t<int, py::array::c_style | py::array::forcecast>;

// Every live-state column with its Python name: the one list that both
// reading a workload's columns and writing a snapshot's go through.
template <typename State, typename Visit>
void for_each_live_column(State& live, Visit&& visit) {
    visit("attained_gpu_s", live.attained_gpu_s);
    visit("done_fraction", live.done_fraction);
    visit("remaining_s", live.remaining_s);
    visit("running", live.running);
    visit("service_since_promotion_gpu_s", live.service_since_promotion);
    visit("held_since_promotion_s", live.held_since_promotion);
    visit("queue_entry_s", live.queue_entry);
    visit("pending_since_s", live.pending_since);
    visit("first_start_s", live.first_start);
    visit("work_start_s", live.work_start);
    visit("last_start_s", live.last_start);
    visit("slice_offset", live.slice_offset);
    visit("slice_pool", live.slice_pool);
    visit("slice_node", live.slice_node);
    visit("slice_gpus", live.slice_gpus);
}

// The live-state columns a simulation starts from; absent ones keep the
// fresh-job defaults (sim::LiveState).
sim::LiveState live_state(const py::dict& columns) {
    sim::LiveState live;
    for_each_live_column(live, [&](const char* name, auto& column) {
        using Value = typename std::decay_t<decltype(column)>::value_type;
        if (columns.contains(name)) {
            column = to_vector(columns[name].cast<py::array_t<Value, py::array::c_style | py::array::forcecast>>());
        }
    });
    return live;
}

py::dict snapshot_dict(const Simulator& simulator, bool include_future) {
    const sim::Snapshot snap = simulator.snapshot(include_future);
    py::dict result;
    result["job"] = to_array(snap.job);
    result["tiresias_queue"] = to_array(snap.tiresias_queue);
    result["preemptions"] = to_array(snap.preemptions);
    for_each_live_column(snap.live, [&](const char* name, const auto& column) { result[name] = to_array(column); });
    return result;
}

}  // namespace

void register_sim(py::module_& m) {
    py::class_<Config>(m, "SimConfig", "Native mirror of itercast.sim.SimConfig")
        .def(py::init([](const std::string& policy, const std::string& placement, bool backfill,
                         double restart_overhead_s, double lease_s,
                         std::vector<double> queue_thresholds_gpu_s, double starvation_factor) {
                 return Config{parse_policy(policy), parse_placement(placement), backfill,
                               restart_overhead_s, lease_s, std::move(queue_thresholds_gpu_s),
                               starvation_factor};
             }),
             py::arg("policy"), py::arg("placement"), py::arg("backfill"),
             py::arg("restart_overhead_s"), py::arg("lease_s"), py::arg("queue_thresholds_gpu_s"),
             py::arg("starvation_factor"));

    py::class_<Simulator>(m, "Simulator", "Event-driven GPU cluster simulator")
        .def(py::init([](const std::vector<std::pair<int, int>>& pools, const Doubles& submit,
                         const Ints& gpus, const Doubles& duration, const Doubles& estimate,
                         const py::dict& live, const Config& config, double start_time,
                         bool record_segments, const Doubles& deadline, const Doubles& preference) {
                 std::vector<sim::PoolSpec> specs;
                 for (const auto& [nodes, per_node] : pools) specs.push_back({nodes, per_node});
                 sim::JobTable table{to_vector(submit), to_vector(gpus), to_vector(duration),
                                     to_vector(estimate), live_state(live), to_vector(deadline),
                                     to_vector(preference)};
                 return new Simulator(std::move(specs), std::move(table), config, start_time,
                                      record_segments);
             }),
             py::arg("pools"), py::arg("submit"), py::arg("gpus"), py::arg("duration"),
             py::arg("estimate"), py::arg("live"), py::arg("config"),
             py::arg("start_time") = std::numeric_limits<double>::quiet_NaN(),
             py::arg("record_segments") = false, py::arg("deadline") = Doubles(),
             py::arg("preference") = Doubles())
        .def("run_until", &Simulator::run_until,
             py::arg("until") = std::numeric_limits<double>::infinity(), py::arg("max_events") = 0,
             py::call_guard<py::gil_scoped_release>())
        .def("set_config", &Simulator::set_config, py::arg("config"))
        .def("set_estimates",
             [](Simulator& simulator, const Doubles& estimates) {
                 simulator.set_estimates(to_vector(estimates));
             },
             py::arg("estimates"))
        .def("snapshot", &snapshot_dict, py::arg("include_future") = false)
        .def_property_readonly("now", &Simulator::now)
        .def_property_readonly("events", &Simulator::events)
        .def_property_readonly("unfinished", &Simulator::unfinished)
        .def_property_readonly("budget_exhausted", &Simulator::budget_exhausted)
        .def("outcome", &outcome_dict)
        .def("segments", &segments_dict);
}

}  // namespace itercast::bindings
