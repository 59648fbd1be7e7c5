#pragma once
// The operator timeline of a trace: iterations (ProfilerStep spans), the
// ordered sequence of outermost framework ops in each, the GPU work each op
// launched, the gap after it, and its structural features.
//
// Kineto writes every host event before every GPU event, so the builder keeps
// compact host records until the stream ends and links everything in finish().
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "timeline/op_features.hpp"
#include "timeline/shapes.hpp"
#include "trace/event.hpp"
#include "trace/string_table.hpp"

namespace itercast::timeline {

constexpr int32_t kNoIteration = -1;

struct OpRecord {
    int32_t iteration = kNoIteration;
    int32_t name = -1;  // string id of the raw name
    Phase phase = Phase::kForward;
    OpClass op_class = OpClass::kOther;
    int32_t thread = 0;  // dense index; see TimelineBuilder::threads()
    int64_t host_start = 0, host_end = 0;
    int32_t kernels = 0;          // kernels launched inside the op (nested calls included)
    int32_t device_activities = 0;  // kernels + memcpys + memsets
    int64_t device_time = 0;      // summed device activity time
    int64_t device_start = trace::kMissing, device_end = trace::kMissing;
    int64_t queue_delay = 0;      // summed launch -> device start
    int64_t duration = 0, gap = 0;  // the labels: see Iteration
    int32_t nested_ops = 0;
    double flops = 0, bytes = 0;
    double output_bytes = 0;  // of the tensors it creates (estimate_output_bytes)
    // of the op or its first nested op with shapes; a backward op with fewer than two tensor inputs
    // takes them from the first op it runs with two or more (the operands, not the output gradient)
    int32_t input_dims = -1, input_types = -1;
};

// Label decomposition: head + sum over ops of (duration + gap) + tail == duration.
// On a device timeline an op's duration is the span of its device activity and
// its gap the time to the next op's first device activity (negative when they
// overlap); an op without device work sits, zero-length, where the previous
// one ended. On CPU-only traces both come from host times.
struct IterationRecord {
    int32_t name = -1;  // string id of ProfilerStep#N, -1 when the whole trace is one iteration
    int64_t start = 0, duration = 0;
    int64_t gpu_start = trace::kMissing, gpu_end = trace::kMissing;
    int64_t gpu_busy = 0;  // union of kernel, memcpy and memset intervals
    int64_t kernels = 0, kernels_linked = 0;
    int64_t head = 0, tail = 0;
    uint32_t first_op = 0, op_count = 0;  // range in ops()
    bool device_timeline = false;
};

class TimelineBuilder : public trace::EventSink {
public:
    explicit TimelineBuilder(const trace::StringTable& strings) : strings_(strings) {}

    void on_event(const trace::Event& event) override;
    // Links and labels everything; call once after the last event.
    void finish();

    const std::vector<OpRecord>& ops() const { return ops_; }
    const std::vector<IterationRecord>& iterations() const { return iterations_; }
    // ops().size() x feature_count() floats, row-major.
    const std::vector<float>& features() const { return features_; }
    // Moves the feature matrix out (features() is empty afterwards).
    std::vector<float> take_features() { return std::move(features_); }
    int64_t kernels_total() const { return kernels_total_; }
    int64_t kernels_linked() const { return kernels_linked_; }
    // Kernels whose launch is not in the trace (launched before profiling began).
    int64_t kernels_unlaunched() const { return kernels_unlaunched_; }
    // (pid, tid, pid/tid-is-string flags) of each dense thread index.
    const std::vector<std::tuple<int64_t, int64_t, uint8_t>>& threads() const { return thread_keys_; }

private:
    enum class EventKind : int8_t { kUnknown = -1, kIgnored, kHostOp, kAnnotation, kRuntime, kKernel, kMemory };
    enum class NameKind : int8_t { kUnknown = -1, kPlain, kStep, kOptimizerSpan, kContext };

    struct HostOp {
        int64_t start, end;
        int32_t thread, name;
        int64_t external_id;
        int32_t input_dims, input_types, concrete_inputs;
        int32_t parent = -1;
    };
    struct Span {
        int64_t start, end;
        int32_t thread, name;
    };
    struct RuntimeCall {
        int64_t start, end;
        int32_t thread, name;
        int64_t external_id, correlation;
    };
    struct DeviceActivity {
        int64_t start, end;
        int64_t external_id, correlation;
        bool is_kernel;
    };
    struct Launch {
        int32_t op;
        int64_t time;
    };

    EventKind kind_of_category(int32_t cat);
    NameKind kind_of_name(int32_t name);
    int32_t thread_of(const trace::Event& event);
    const OpIdentity& identity_of(int32_t name);

    void nest_host_ops();
    void adopt_orphan_launches();
    void rebuild_roots_by_thread();
    int32_t annotation_around(int32_t thread, int64_t time) const;
    int32_t root_containing(int32_t thread, int64_t time) const;
    bool no_root_between(int32_t thread, int64_t from, int64_t to) const;
    void order_ops_into_iterations();
    void assign_phases();
    void link_device_activity();
    int32_t op_containing(int32_t thread, int64_t time) const;
    int32_t iteration_at(int64_t time) const;
    void label_iterations();
    void compute_features();

    const trace::StringTable& strings_;
    std::vector<EventKind> category_kinds_;
    std::vector<NameKind> name_kinds_;
    std::vector<OpIdentity> identities_;  // by name id; filled lazily
    std::vector<bool> identified_;
    std::map<std::tuple<int64_t, int64_t, uint8_t>, int32_t> thread_ids_;
    std::vector<std::tuple<int64_t, int64_t, uint8_t>> thread_keys_;

    std::vector<HostOp> host_ops_;
    std::vector<Span> steps_, optimizer_spans_;
    std::vector<Span> annotations_;  // non-step annotations: context for launches outside ops
    std::vector<RuntimeCall> runtime_calls_;
    std::vector<DeviceActivity> device_activities_;
    int64_t trace_start_ = INT64_MAX, trace_end_ = INT64_MIN;

    std::vector<int32_t> root_of_;              // host op -> its outermost op
    std::vector<int32_t> op_of_root_;           // host op index (root) -> index in ops_
    std::vector<std::vector<int32_t>> roots_by_thread_;  // sorted by start
    std::vector<int32_t> nesting_order_;  // host ops by thread, start, longest first: parents before what they nest
    std::vector<int32_t> op_host_index_;        // ops_ -> host op
    std::vector<std::vector<std::pair<int64_t, int64_t>>> busy_intervals_;

    std::vector<OpRecord> ops_;
    std::vector<IterationRecord> iterations_;
    std::vector<float> features_;
    InputCache inputs_;
    int64_t kernels_total_ = 0, kernels_linked_ = 0, kernels_unlaunched_ = 0;
};

}  // namespace itercast::timeline
