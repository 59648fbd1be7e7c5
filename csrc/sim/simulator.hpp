#pragma once
// Discrete-event GPU cluster simulator. Time jumps from event to event
// (arrival, completion, lease expiry, queue demotion, starvation promotion);
// the scheduler runs once per distinct event time, and only when jobs wait.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <vector>

#include "sim/config.hpp"
#include "sim/pool.hpp"

namespace itercast::sim {

struct PoolSpec {
    int nodes;
    int gpus_per_node;
};

// The state of a live cluster that a simulation starts from, per job (all
// empty for a fresh replay). Times are on the simulation's clock; NaN where a
// value is not known, which gives the fresh-job default.
struct LiveState {
    std::vector<double> attained_gpu_s;           // service already received (default 0)
    std::vector<double> done_fraction;            // work already done, 0..1 (default 0)
    std::vector<double> remaining_s;              // work left on the fastest pool; wins over done_fraction
    std::vector<uint8_t> running;                 // holds GPUs at the start (default no)
    std::vector<double> service_since_promotion;  // GPU-s; Tiresias queue (default attained)
    std::vector<double> held_since_promotion;     // wall s on GPUs since promotion (default 0)
    std::vector<double> queue_entry;              // entered its Tiresias queue (default submit)
    std::vector<double> pending_since;            // waiting since; NaN: not queued yet
    std::vector<double> first_start;              // first time on GPUs (default NaN)
    std::vector<double> work_start;               // running: productive work (re)starts (default start)
    std::vector<double> last_start;               // running: last (re)start, its lease counts from it (default start)
    // Running jobs' exact GPUs: slices of job j are [slice_offset[j], slice_offset[j + 1]).
    std::vector<int> slice_offset;
    std::vector<int> slice_pool;
    std::vector<int> slice_node;
    std::vector<int> slice_gpus;
};

// Column-major job table; `duration` is jobs x pools, row-major, with +inf
// where a job cannot run on a pool.
struct JobTable {
    std::vector<double> submit;
    std::vector<int> gpus;
    std::vector<double> duration;
    std::vector<double> estimate;  // estimated duration on the fastest pool
    LiveState live;
    std::vector<double> deadline;  // absolute time; empty: no job has one (EDF then orders by submit)
    // jobs x pools, row-major: the order a job tries GPU types in, smallest first (e.g. its
    // estimated run time there); empty: its true run times
    std::vector<double> preference;
};

// Unfinished jobs at one instant, in job order: enough to start a simulation
// of the rest that continues this one exactly.
struct Snapshot {
    std::vector<int> job;  // index in the simulated job table
    LiveState live;
    std::vector<int> tiresias_queue;
    std::vector<int> preemptions;
};

struct Segment {  // one uninterrupted stay of a job on GPUs
    int job;
    int pool;
    double start;
    double end;
    std::vector<Slice> slices;
};

struct Outcome {  // per job; NaN until known
    std::vector<double> first_start;
    std::vector<double> finish;
    std::vector<int> preemptions;
    std::vector<double> busy_gpu_s;  // GPU-seconds held, restart overhead included
    std::vector<int> last_pool;
};

class Simulator {
public:
    Simulator(std::vector<PoolSpec> pools, JobTable jobs, Config config, double start_time,
              bool record_segments);

    // Processes every event up to and including `until`; returns true when all
    // jobs have finished. With `max_events` > 0 it stops once that many events
    // were processed in total (a thrashing configuration) and sets
    // budget_exhausted().
    bool run_until(double until = std::numeric_limits<double>::infinity(), uint64_t max_events = 0);
    // Swaps the policy configuration at the current time; the next scheduling
    // pass uses it.
    void set_config(const Config& config);
    // Replaces every job's duration estimate (e.g. a refitted estimator);
    // waiting jobs are re-ranked at the next scheduling pass.
    void set_estimates(std::vector<double> estimates);
    // Unfinished jobs that have arrived by now (and, with include_future,
    // those still to arrive).
    Snapshot snapshot(bool include_future) const;

    double now() const { return now_; }
    uint64_t events() const { return events_; }
    int unfinished() const { return unfinished_; }
    bool budget_exhausted() const { return budget_exhausted_; }
    const Outcome& outcome() const { return outcome_; }
    const std::vector<Segment>& segments() const { return segments_; }

private:
    enum class Phase : uint8_t { future, pending, running, done };
    enum class EventKind : uint8_t { finish, lease, demote, promote };

    struct Key {  // smaller runs first
        double primary;
        int tier;  // 0: running, 1: pending (a running job wins a tie)
        double secondary;
        int job;
        bool operator<(const Key& other) const {
            return std::tie(primary, tier, secondary, job) <
                   std::tie(other.primary, other.tier, other.secondary, other.job);
        }
    };

    struct Event {
        double time;
        uint64_t seq;
        int job;
        uint32_t version;
        EventKind kind;
        bool operator>(const Event& other) const {
            return time != other.time ? time > other.time : seq > other.seq;
        }
    };

    struct JobState {
        Phase phase = Phase::future;
        bool resumed = false;  // the next start pays the restart overhead
        int pool = -1;
        int queue = 0;  // Tiresias queue
        uint32_t version = 0;
        double remaining_s = 0;  // work left, in seconds on `remaining_pool`
        int remaining_pool = 0;
        double attained_gpu_s = 0;
        double service_since_promotion = 0;  // GPU-s; decides the Tiresias queue
        double held_since_promotion = 0;     // wall seconds on GPUs since promotion
        double queue_entry = 0;
        double segment_start = 0;
        double work_start = 0;
        double last_start = 0;  // the lease counts from here
        double lease_end = 0;
        double pending_since = 0;
        Key pending_key{};
        std::vector<Slice> slices;
    };

    void check_jobs_fit() const;
    void restore(int job);
    void restore_running(int job);
    void rekey_all();
    double next_event_time() const;
    void process_batch(double time);
    void handle(const Event& event);

    struct Plan {
        std::vector<int> starts;   // pending jobs that outrank running ones
        std::vector<int> victims;  // running jobs whose GPUs they need
    };

    void schedule(double time);
    Plan plan_preemptions(double time) const;
    void apply(const Plan& plan, double time);
    void fill(double time, bool backfill);
    bool try_start(int job, double time);
    void start(int job, int pool, double time);
    void stop(int job, double time, bool release_gpus);
    void finish(int job, double time);
    void preempt(int job, double time, bool release_gpus);

    void enqueue(int job, double time);
    void dequeue(int job);
    Key key_of(int job, double time) const;
    double deadline_of(int job) const;  // +inf when the job has none
    double attained_at(int job, double time) const;
    double service_since_promotion_at(int job, double time) const;
    double remaining_fraction_at(int job, double time) const;
    double duration_on(int job, int pool) const;
    double remaining_on(int job, int pool) const;
    const int* pools_in_preference(int job) const;
    int preferred_pool_within(int job, const std::vector<int>& budget) const;
    int tiresias_queue_of(double service) const;
    void push(double time, int job, EventKind kind);
    void push_running_events(int job);
    void push_demotion(int job);
    void push_promotion(int job);

    std::vector<Pool> pools_;
    JobTable jobs_;
    Config config_;
    bool record_segments_;
    int n_;
    int total_free_ = 0;

    std::vector<JobState> state_;
    std::vector<int> pool_order_;  // per job, pools in the order it tries them (preferred first), -1 padded
    std::vector<int> fastest_pool_;  // per job, the pool it runs fastest on: work left is counted there
    std::vector<int> arrival_order_;
    double start_time_;
    size_t next_arrival_ = 0;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
    uint64_t seq_ = 0;
    std::set<Key> pending_;
    std::vector<int> running_;       // unordered; running_slot_ indexes it
    std::vector<int> running_slot_;
    double now_;
    uint64_t events_ = 0;
    bool budget_exhausted_ = false;
    int unfinished_;
    Outcome outcome_;
    std::vector<Segment> segments_;
};

}  // namespace itercast::sim
