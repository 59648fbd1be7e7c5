#include "timeline/timeline.hpp"
#include "timeline/cost_model.hpp"

#include <algorithm>
#include <numeric>
#include <string_view>

namespace itercast::timeline {

namespace {

using trace::kMissing;

// A runtime call whose External id names an op counts only if it also lies
// inside that op (2022-23 traces carry External ids that point elsewhere).
constexpr int64_t kNestingToleranceNs = 1000;

int32_t tensor_inputs(const std::vector<InputShape>& dims) {
    return static_cast<int32_t>(std::count_if(dims.begin(), dims.end(), [](const InputShape& s) { return s.is_tensor; }));
}

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

template <class Interval>
bool contains(const Interval& outer, const Interval& inner) {
    return inner.end <= outer.end && (inner.start < outer.end || inner.start == outer.start);
}

int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& intervals) {
    std::sort(intervals.begin(), intervals.end());
    int64_t total = 0;
    int64_t open = INT64_MIN, close = INT64_MIN;
    for (const auto& [start, end] : intervals) {
        if (start > close) {
            if (close > open) total += close - open;
            open = start;
            close = end;
        } else {
            close = std::max(close, end);
        }
    }
    if (close > open) total += close - open;
    return total;
}

}  // namespace

TimelineBuilder::EventKind TimelineBuilder::kind_of_category(int32_t cat) {
    if (cat < 0) return EventKind::kIgnored;
    if (static_cast<size_t>(cat) >= category_kinds_.size()) category_kinds_.resize(static_cast<size_t>(cat) + 1, EventKind::kUnknown);
    EventKind& kind = category_kinds_[static_cast<size_t>(cat)];
    if (kind != EventKind::kUnknown) return kind;
    const std::string_view text = strings_.at(cat);
    if (text == "cpu_op" || text == "Operator") kind = EventKind::kHostOp;
    else if (text == "user_annotation") kind = EventKind::kAnnotation;
    else if (text == "cuda_runtime" || text == "Runtime" || text == "cuda_driver") kind = EventKind::kRuntime;
    else if (text == "kernel" || text == "Kernel") kind = EventKind::kKernel;
    else if (text == "gpu_memcpy" || text == "Memcpy" || text == "gpu_memset" || text == "Memset") kind = EventKind::kMemory;
    else kind = EventKind::kIgnored;
    return kind;
}

TimelineBuilder::NameKind TimelineBuilder::kind_of_name(int32_t name) {
    if (name < 0) return NameKind::kPlain;
    if (static_cast<size_t>(name) >= name_kinds_.size()) name_kinds_.resize(static_cast<size_t>(name) + 1, NameKind::kUnknown);
    NameKind& kind = name_kinds_[static_cast<size_t>(name)];
    if (kind != NameKind::kUnknown) return kind;
    const std::string_view text = strings_.at(name);
    if (starts_with(text, "ProfilerStep#")) kind = NameKind::kStep;
    else if (starts_with(text, "Optimizer.")) kind = NameKind::kOptimizerSpan;
    else if (starts_with(text, "##")) kind = NameKind::kContext;
    else kind = NameKind::kPlain;
    return kind;
}

const OpIdentity& TimelineBuilder::identity_of(int32_t name) {
    const auto index = static_cast<size_t>(name);
    if (index >= identities_.size()) {
        identities_.resize(index + 1);
        identified_.resize(index + 1, false);
    }
    if (!identified_[index]) {
        identities_[index] = identify_op(strings_.at(name));
        identified_[index] = true;
    }
    return identities_[index];
}

int32_t TimelineBuilder::thread_of(const trace::Event& event) {
    const auto key = std::make_tuple(event.pid, event.tid, static_cast<uint8_t>(event.flags & 3));
    const auto [it, inserted] = thread_ids_.emplace(key, static_cast<int32_t>(thread_keys_.size()));
    if (inserted) thread_keys_.push_back(key);
    return it->second;
}

void TimelineBuilder::on_event(const trace::Event& e) {
    if (e.ph != 'X' || e.ts_ns == kMissing || e.dur_ns == kMissing) return;
    const EventKind kind = kind_of_category(e.cat);
    if (kind == EventKind::kIgnored) return;
    const int64_t end = e.ts_ns + std::max<int64_t>(e.dur_ns, 0);
    trace_start_ = std::min(trace_start_, e.ts_ns);
    trace_end_ = std::max(trace_end_, end);
    switch (kind) {
        case EventKind::kHostOp:
        case EventKind::kAnnotation: {
            const NameKind name_kind = kind_of_name(e.name);
            if (name_kind == NameKind::kStep) {
                steps_.push_back({e.ts_ns, end, thread_of(e), e.name});
            } else if (kind == EventKind::kHostOp && name_kind == NameKind::kPlain) {
                host_ops_.push_back({e.ts_ns, end, thread_of(e), e.name, e.external_id,
                                     e.input_dims, e.input_types, e.concrete_inputs});
            } else {
                if (name_kind == NameKind::kOptimizerSpan) optimizer_spans_.push_back({e.ts_ns, end, thread_of(e), e.name});
                annotations_.push_back({e.ts_ns, end, thread_of(e), e.name});
            }
            break;
        }
        case EventKind::kRuntime:
            runtime_calls_.push_back({e.ts_ns, end, thread_of(e), e.name, e.external_id, e.correlation});
            break;
        case EventKind::kKernel:
        case EventKind::kMemory:
            device_activities_.push_back({e.ts_ns, end, e.external_id, e.correlation, kind == EventKind::kKernel});
            break;
        default: break;
    }
}

void TimelineBuilder::finish() {
    nest_host_ops();
    adopt_orphan_launches();
    order_ops_into_iterations();
    assign_phases();
    link_device_activity();
    label_iterations();
    compute_features();
}

// Outermost ops are those not inside another op of the same thread.
void TimelineBuilder::nest_host_ops() {
    const size_t n = host_ops_.size();
    std::vector<int32_t>& order = nesting_order_;
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const HostOp& x = host_ops_[static_cast<size_t>(a)];
        const HostOp& y = host_ops_[static_cast<size_t>(b)];
        if (x.thread != y.thread) return x.thread < y.thread;
        if (x.start != y.start) return x.start < y.start;
        if (x.end != y.end) return x.end > y.end;
        return a < b;
    });
    root_of_.assign(n, -1);
    roots_by_thread_.assign(thread_keys_.size(), {});
    std::vector<int32_t> stack;
    int32_t current_thread = -1;
    for (int32_t index : order) {
        HostOp& op = host_ops_[static_cast<size_t>(index)];
        if (op.thread != current_thread) {
            stack.clear();
            current_thread = op.thread;
        }
        while (!stack.empty() && !contains(host_ops_[static_cast<size_t>(stack.back())], op)) stack.pop_back();
        if (stack.empty()) {
            root_of_[static_cast<size_t>(index)] = index;
            roots_by_thread_[static_cast<size_t>(op.thread)].push_back(index);
        } else {
            op.parent = stack.back();
            root_of_[static_cast<size_t>(index)] = root_of_[static_cast<size_t>(stack.back())];
        }
        stack.push_back(index);
    }
}

// The innermost annotation of `thread` around `time`, or -1.
int32_t TimelineBuilder::annotation_around(int32_t thread, int64_t time) const {
    int32_t best = -1;
    for (size_t i = 0; i < annotations_.size(); ++i) {
        const Span& span = annotations_[i];
        if (span.thread != thread || time < span.start || time > span.end) continue;
        if (best < 0 || span.end - span.start < annotations_[static_cast<size_t>(best)].end -
                                                      annotations_[static_cast<size_t>(best)].start)
            best = static_cast<int32_t>(i);
    }
    return best;
}

// Launches outside every framework op (fused optimizers calling CUDA directly,
// CUDA graph replays) still put work on the device: consecutive ones under
// the same innermost annotation become one op named after it (or after the
// runtime call when nothing encloses them), so no device work is dropped.
void TimelineBuilder::adopt_orphan_launches() {
    std::vector<size_t> orphans;
    for (size_t i = 0; i < runtime_calls_.size(); ++i) {
        const RuntimeCall& call = runtime_calls_[i];
        if (call.correlation != kMissing && root_containing(call.thread, call.start) < 0) orphans.push_back(i);
    }
    std::sort(orphans.begin(), orphans.end(), [&](size_t a, size_t b) {
        const RuntimeCall& x = runtime_calls_[a];
        const RuntimeCall& y = runtime_calls_[b];
        return x.thread != y.thread ? x.thread < y.thread : x.start < y.start;
    });
    int32_t group_annotation = -2;
    int32_t group_op = -1;
    for (size_t index : orphans) {
        const RuntimeCall& call = runtime_calls_[index];
        const int32_t annotation = annotation_around(call.thread, call.start);
        const bool extends = group_op >= 0 && annotation == group_annotation && annotation >= 0 &&
                             host_ops_[static_cast<size_t>(group_op)].thread == call.thread &&
                             no_root_between(call.thread, host_ops_[static_cast<size_t>(group_op)].end, call.start);
        if (extends) {
            host_ops_[static_cast<size_t>(group_op)].end = std::max(host_ops_[static_cast<size_t>(group_op)].end, call.end);
            continue;
        }
        const int32_t name = annotation >= 0 ? annotations_[static_cast<size_t>(annotation)].name : call.name;
        group_op = static_cast<int32_t>(host_ops_.size());
        group_annotation = annotation;
        host_ops_.push_back({call.start, call.end, call.thread, name, kMissing, -1, -1, -1});
        root_of_.push_back(group_op);
    }
    rebuild_roots_by_thread();
}

void TimelineBuilder::rebuild_roots_by_thread() {
    roots_by_thread_.assign(thread_keys_.size(), {});
    for (size_t i = 0; i < host_ops_.size(); ++i)
        if (root_of_[i] == static_cast<int32_t>(i)) roots_by_thread_[static_cast<size_t>(host_ops_[i].thread)].push_back(static_cast<int32_t>(i));
    for (auto& roots : roots_by_thread_)
        std::sort(roots.begin(), roots.end(), [&](int32_t a, int32_t b) {
            return host_ops_[static_cast<size_t>(a)].start < host_ops_[static_cast<size_t>(b)].start;
        });
}

// The outermost host op of `thread` around `time` (index into host_ops_), or -1.
int32_t TimelineBuilder::root_containing(int32_t thread, int64_t time) const {
    if (thread < 0 || static_cast<size_t>(thread) >= roots_by_thread_.size()) return -1;
    const auto& roots = roots_by_thread_[static_cast<size_t>(thread)];
    auto after = std::upper_bound(roots.begin(), roots.end(), time, [&](int64_t t, int32_t root) {
        return t < host_ops_[static_cast<size_t>(root)].start;
    });
    if (after == roots.begin()) return -1;
    const int32_t root = *(after - 1);
    return time <= host_ops_[static_cast<size_t>(root)].end ? root : -1;
}

bool TimelineBuilder::no_root_between(int32_t thread, int64_t from, int64_t to) const {
    const auto& roots = roots_by_thread_[static_cast<size_t>(thread)];
    auto first = std::upper_bound(roots.begin(), roots.end(), from, [&](int64_t t, int32_t root) {
        return t < host_ops_[static_cast<size_t>(root)].start;
    });
    return first == roots.end() || host_ops_[static_cast<size_t>(*first)].start > to;
}

int32_t TimelineBuilder::iteration_at(int64_t time) const {
    if (steps_.empty()) return 0;
    auto after = std::upper_bound(steps_.begin(), steps_.end(), time,
                                  [](int64_t t, const Span& step) { return t < step.start; });
    if (after == steps_.begin()) return kNoIteration;
    const auto index = static_cast<int32_t>(after - steps_.begin() - 1);
    return time < steps_[static_cast<size_t>(index)].end ? index : kNoIteration;
}

void TimelineBuilder::order_ops_into_iterations() {
    std::sort(steps_.begin(), steps_.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    if (steps_.empty() && trace_start_ <= trace_end_) {
        iterations_.push_back({});
        iterations_.back().start = trace_start_;
        iterations_.back().duration = trace_end_ - trace_start_;
    }
    for (const Span& step : steps_) {
        IterationRecord record;
        record.name = step.name;
        record.start = step.start;
        record.duration = step.end - step.start;
        iterations_.push_back(record);
    }
    busy_intervals_.assign(iterations_.size(), {});

    std::vector<int32_t> roots;
    for (size_t i = 0; i < host_ops_.size(); ++i)
        if (root_of_[i] == static_cast<int32_t>(i)) roots.push_back(static_cast<int32_t>(i));
    std::sort(roots.begin(), roots.end(), [&](int32_t a, int32_t b) {
        const HostOp& x = host_ops_[static_cast<size_t>(a)];
        const HostOp& y = host_ops_[static_cast<size_t>(b)];
        return x.start != y.start ? x.start < y.start : x.thread < y.thread;
    });
    op_of_root_.assign(host_ops_.size(), -1);
    ops_.reserve(roots.size());
    for (int32_t root : roots) {
        const HostOp& host = host_ops_[static_cast<size_t>(root)];
        OpRecord op;
        op.iteration = iteration_at(host.start);
        op.name = host.name;
        op.thread = host.thread;
        op.host_start = host.start;
        op.host_end = host.end;
        op_of_root_[static_cast<size_t>(root)] = static_cast<int32_t>(ops_.size());
        op_host_index_.push_back(root);
        ops_.push_back(op);
    }
    // Ops are ordered by start, so each iteration's ops are one contiguous run.
    for (size_t i = 0; i < ops_.size(); ++i) {
        const int32_t it = ops_[i].iteration;
        if (it == kNoIteration) continue;
        IterationRecord& record = iterations_[static_cast<size_t>(it)];
        if (record.op_count == 0) record.first_op = static_cast<uint32_t>(i);
        record.op_count = static_cast<uint32_t>(i + 1 - record.first_op);
    }
}

// Forward, then backward from the first autograd node of the iteration, and
// optimizer inside Optimizer.* spans of the same thread.
void TimelineBuilder::assign_phases() {
    std::vector<int64_t> first_backward(iterations_.size(), INT64_MAX);
    for (OpRecord& op : ops_) {
        // "Fwd thread id" is no backward marker: forward ops carry it too (as 0) since torch 2.x.
        if (identity_of(op.name).backward) {
            op.phase = Phase::kBackward;
            if (op.iteration != kNoIteration)
                first_backward[static_cast<size_t>(op.iteration)] =
                    std::min(first_backward[static_cast<size_t>(op.iteration)], op.host_start);
        }
    }
    for (OpRecord& op : ops_) {
        if (op.iteration != kNoIteration && op.host_start >= first_backward[static_cast<size_t>(op.iteration)])
            op.phase = Phase::kBackward;
        for (const Span& span : optimizer_spans_)
            if (span.thread == op.thread && op.host_start >= span.start && op.host_start < span.end) {
                op.phase = Phase::kOptimizer;
                break;
            }
    }
}

int32_t TimelineBuilder::op_containing(int32_t thread, int64_t time) const {
    const int32_t root = root_containing(thread, time);
    return root < 0 ? -1 : op_of_root_[static_cast<size_t>(root)];
}

// Launch -> device activity by correlation; runtime call -> op by External id
// when consistent, else by time nesting on the calling thread.
void TimelineBuilder::link_device_activity() {
    std::unordered_map<int64_t, int32_t> op_by_external_id;
    for (size_t i = 0; i < host_ops_.size(); ++i)
        if (host_ops_[i].external_id != kMissing)
            op_by_external_id.emplace(host_ops_[i].external_id, op_of_root_[static_cast<size_t>(root_of_[i])]);

    std::unordered_map<int64_t, Launch> launches;
    launches.reserve(runtime_calls_.size());
    for (const RuntimeCall& call : runtime_calls_) {
        if (call.correlation == kMissing) continue;
        int32_t op = -1;
        const auto found = op_by_external_id.find(call.external_id);
        if (call.external_id != kMissing && found != op_by_external_id.end()) {
            const OpRecord& candidate = ops_[static_cast<size_t>(found->second)];
            if (call.start + kNestingToleranceNs >= candidate.host_start &&
                call.start <= candidate.host_end + kNestingToleranceNs)
                op = found->second;
        }
        if (op < 0) op = op_containing(call.thread, call.start);
        launches[call.correlation] = {op, call.start};
    }

    for (const DeviceActivity& activity : device_activities_) {
        int32_t op = -1;
        int64_t launch_time = kMissing;
        const auto launch = activity.correlation == kMissing ? launches.end() : launches.find(activity.correlation);
        if (launch != launches.end()) {
            op = launch->second.op;
            launch_time = launch->second.time;
        } else if (activity.external_id != kMissing) {
            const auto found = op_by_external_id.find(activity.external_id);
            if (found != op_by_external_id.end()) op = found->second;
        }
        if (activity.is_kernel) {
            ++kernels_total_;
            kernels_linked_ += op >= 0 ? 1 : 0;
            kernels_unlaunched_ += op < 0 && launch == launches.end() ? 1 : 0;
        }
        const int32_t it = iteration_at(launch_time != kMissing ? launch_time : activity.start);
        if (it != kNoIteration) {
            IterationRecord& record = iterations_[static_cast<size_t>(it)];
            busy_intervals_[static_cast<size_t>(it)].emplace_back(activity.start, activity.end);
            record.gpu_start = record.gpu_start == kMissing ? activity.start : std::min(record.gpu_start, activity.start);
            record.gpu_end = record.gpu_end == kMissing ? activity.end : std::max(record.gpu_end, activity.end);
            if (activity.is_kernel) {
                ++record.kernels;
                record.kernels_linked += op >= 0 ? 1 : 0;
            }
        }
        if (op < 0) continue;
        OpRecord& target = ops_[static_cast<size_t>(op)];
        target.kernels += activity.is_kernel ? 1 : 0;
        ++target.device_activities;
        target.device_time += activity.end - activity.start;
        target.device_start = target.device_start == kMissing ? activity.start : std::min(target.device_start, activity.start);
        target.device_end = target.device_end == kMissing ? activity.end : std::max(target.device_end, activity.end);
        if (launch_time != kMissing) target.queue_delay += activity.start - launch_time;
    }
    for (size_t i = 0; i < iterations_.size(); ++i) iterations_[i].gpu_busy = union_length(busy_intervals_[i]);
}

void TimelineBuilder::label_iterations() {
    for (IterationRecord& record : iterations_) {
        const uint32_t begin = record.first_op;
        const uint32_t end = record.first_op + record.op_count;
        bool device = false;
        for (uint32_t i = begin; i < end; ++i) device = device || ops_[i].device_activities > 0;
        record.device_timeline = device;
        int64_t cursor = record.start;
        std::vector<std::pair<int64_t, int64_t>> anchors;
        anchors.reserve(record.op_count);
        for (uint32_t i = begin; i < end; ++i) {
            const OpRecord& op = ops_[i];
            if (!device) anchors.emplace_back(op.host_start, op.host_end);
            else if (op.device_activities > 0) anchors.emplace_back(op.device_start, op.device_end);
            else anchors.emplace_back(cursor, cursor);
            cursor = anchors.back().second;
        }
        if (anchors.empty()) {
            record.head = record.duration;
            continue;
        }
        for (size_t k = 0; k < anchors.size(); ++k) {
            OpRecord& op = ops_[begin + k];
            op.duration = anchors[k].second - anchors[k].first;
            op.gap = k + 1 < anchors.size() ? anchors[k + 1].first - anchors[k].second : 0;
        }
        record.head = anchors.front().first - record.start;
        record.tail = record.start + record.duration - anchors.back().second;
    }
}

void TimelineBuilder::compute_features() {
    // Cost of a host op: its own formula when it has one, else its nested ops' summed.
    const size_t n = host_ops_.size();
    std::vector<double> flops(n, 0), bytes(n, 0), nested_flops(n, 0), nested_bytes(n, 0);
    std::vector<double> output_bytes(n, 0), nested_output_bytes(n, 0);
    std::vector<int32_t> descendants(n, 0);
    std::vector<int32_t> shaped(n, -1);  // the op itself or first nested op with shapes
    std::vector<int32_t> first_shaped_child(n, -1);
    std::vector<int32_t> operands(n, -1);  // the op itself or first nested op with two or more tensor inputs
    std::vector<int32_t> first_operands_child(n, -1);
    std::vector<int32_t> tensors(n, 0);
    static const std::vector<DType> no_types;
    auto visit = [&](size_t i) {
        const HostOp& op = host_ops_[i];
        double own_flops = 0, own_bytes = 0, own_output_bytes = -1;
        bool known = false;
        if (op.input_dims >= 0) {
            const auto& dims = inputs_.dims(op.input_dims, strings_.at(op.input_dims));
            const auto& types = op.input_types >= 0 ? inputs_.types(op.input_types, strings_.at(op.input_types)) : no_types;
            const ConcreteInputs* concrete =
                op.concrete_inputs >= 0 ? &inputs_.concrete(op.concrete_inputs, strings_.at(op.concrete_inputs)) : nullptr;
            const OpIdentity& identity = identity_of(op.name);
            known = estimate_cost(identity, dims, types, concrete, own_flops, own_bytes);
            own_output_bytes = estimate_output_bytes(identity, dims, types, concrete);
            if (!dims.empty()) shaped[i] = static_cast<int32_t>(i);
            tensors[i] = tensor_inputs(dims);
            if (tensors[i] >= 2) operands[i] = static_cast<int32_t>(i);
        }
        if (shaped[i] < 0) shaped[i] = first_shaped_child[i];
        if (operands[i] < 0) operands[i] = first_operands_child[i];
        flops[i] = known ? own_flops : nested_flops[i];
        bytes[i] = known ? own_bytes : nested_bytes[i];
        output_bytes[i] = own_output_bytes >= 0 ? own_output_bytes : nested_output_bytes[i];
        if (op.parent < 0) return;
        const auto parent = static_cast<size_t>(op.parent);
        nested_flops[parent] += flops[i];
        nested_bytes[parent] += bytes[i];
        nested_output_bytes[parent] += output_bytes[i];
        descendants[parent] += 1 + descendants[i];
        // Children are visited last to first: the last one written is the first with shapes.
        if (shaped[i] >= 0) first_shaped_child[parent] = shaped[i];
        if (operands[i] >= 0) first_operands_child[parent] = operands[i];
    };
    // Backwards through the nesting order, every op is complete before it is added to its
    // parent. Ops adopted after nesting (orphan launches) are roots that nest nothing.
    for (auto it = nesting_order_.rbegin(); it != nesting_order_.rend(); ++it) visit(static_cast<size_t>(*it));
    for (size_t i = nesting_order_.size(); i < n; ++i) visit(i);

    const size_t width = feature_count();
    features_.assign(ops_.size() * width, 0.0f);
    for (size_t k = 0; k < ops_.size(); ++k) {
        OpRecord& op = ops_[k];
        const auto host = static_cast<size_t>(op_host_index_[k]);
        op.flops = flops[host];
        op.bytes = bytes[host];
        op.output_bytes = output_bytes[host];
        op.nested_ops = descendants[host];
        // An autograd node records only the output gradient: the op it runs (mm, convolution_backward,
        // a recurrent layer's backward) shows the operands, the weight among them.
        const OpIdentity& identity = identity_of(op.name);
        int32_t source = shaped[host];
        if (identity.backward && operands[host] >= 0 && (source < 0 || tensors[static_cast<size_t>(source)] < 2))
            source = operands[host];
        if (source >= 0) {
            op.input_dims = host_ops_[static_cast<size_t>(source)].input_dims;
            op.input_types = host_ops_[static_cast<size_t>(source)].input_types;
        }
        OpStructure structure;
        structure.identity = &identity;
        op.op_class = structure.identity->op_class;
        structure.phase = op.phase;
        structure.inputs = op.input_dims >= 0 ? &inputs_.dims(op.input_dims, strings_.at(op.input_dims)) : nullptr;
        structure.dtypes = op.input_types >= 0 ? &inputs_.types(op.input_types, strings_.at(op.input_types)) : nullptr;
        structure.flops = op.flops;
        structure.bytes = op.bytes;
        structure.nested_ops = op.nested_ops;
        structure.output_bytes = op.output_bytes;
        write_features(structure, features_.data() + k * width);
    }
}

}  // namespace itercast::timeline
