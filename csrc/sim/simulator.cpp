#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

namespace itercast::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

namespace {
constexpr double kQueueLimitTolerance = 1e-9;  // relative; see tiresias_queue_of

// A live-state column's value for `job`, or `fallback` where the column is
// absent or holds NaN.
double live_or(const std::vector<double>& column, int job, double fallback) {
    if (column.empty() || std::isnan(column[job])) return fallback;
    return column[job];
}

void check_live_columns(const LiveState& live, size_t n) {
    const std::vector<const std::vector<double>*> doubles = {
        &live.attained_gpu_s, &live.done_fraction,  &live.remaining_s, &live.service_since_promotion,
        &live.held_since_promotion, &live.queue_entry, &live.pending_since,
        &live.first_start,    &live.work_start,     &live.last_start};
    bool ok = live.running.empty() || live.running.size() == n;
    for (const auto* column : doubles) ok &= column->empty() || column->size() == n;
    ok &= live.slice_offset.empty() || live.slice_offset.size() == n + 1;
    if (!live.slice_offset.empty()) {
        const size_t slices = static_cast<size_t>(live.slice_offset.back());
        ok &= live.slice_pool.size() == slices && live.slice_node.size() == slices &&
              live.slice_gpus.size() == slices;
    }
    if (!ok) throw std::invalid_argument("live-state columns differ in length from the job table");
}
}  // namespace

Simulator::Simulator(std::vector<PoolSpec> pools, JobTable jobs, Config config, double start_time,
                     bool record_segments)
    : jobs_(std::move(jobs)),
      config_(std::move(config)),
      record_segments_(record_segments),
      n_(static_cast<int>(jobs_.submit.size())),
      unfinished_(n_) {
    const size_t n = jobs_.submit.size();
    if (pools.empty()) throw std::invalid_argument("the cluster has no GPU pools");
    if (jobs_.gpus.size() != n || jobs_.duration.size() != n * pools.size() ||
        jobs_.estimate.size() != n || (!jobs_.deadline.empty() && jobs_.deadline.size() != n) ||
        (!jobs_.preference.empty() && jobs_.preference.size() != n * pools.size())) {
        throw std::invalid_argument("job table columns differ in length");
    }
    check_live_columns(jobs_.live, n);
    for (const PoolSpec& spec : pools) {
        pools_.emplace_back(spec.nodes, spec.gpus_per_node);
        total_free_ += pools_.back().capacity();
    }
    check_jobs_fit();

    const int pool_count = static_cast<int>(pools_.size());
    pool_order_.assign(n * pool_count, -1);
    fastest_pool_.assign(n, -1);
    outcome_.first_start.assign(n, kNaN);
    outcome_.finish.assign(n, kNaN);
    outcome_.preemptions.assign(n, 0);
    outcome_.busy_gpu_s.assign(n, 0.0);
    outcome_.last_pool.assign(n, -1);
    state_.resize(n);
    running_slot_.assign(n, -1);
    for (int job = 0; job < n_; ++job) {
        int* order = &pool_order_[job * pool_count];
        int usable = 0;
        int& fastest = fastest_pool_[job];  // the first of the fastest, in the cluster's pool order
        for (int pool = 0; pool < pool_count; ++pool) {
            if (!std::isfinite(duration_on(job, pool))) continue;
            order[usable++] = pool;
            if (fastest < 0 || duration_on(job, pool) < duration_on(job, fastest)) fastest = pool;
        }
        // ties keep the cluster's pool order
        const double* rank = jobs_.preference.empty()
                                 ? &jobs_.duration[static_cast<size_t>(job) * pool_count]
                                 : &jobs_.preference[static_cast<size_t>(job) * pool_count];
        std::stable_sort(order, order + usable, [&](int a, int b) { return rank[a] < rank[b]; });
    }

    arrival_order_.resize(n);
    std::iota(arrival_order_.begin(), arrival_order_.end(), 0);
    std::stable_sort(arrival_order_.begin(), arrival_order_.end(),
                     [&](int a, int b) { return jobs_.submit[a] < jobs_.submit[b]; });
    const double first_submit = n ? jobs_.submit[arrival_order_[0]] : 0.0;
    start_time_ = std::isfinite(start_time) ? start_time : first_submit;
    now_ = start_time_;
    for (int job = 0; job < n_; ++job) restore(job);
}

// Sets a job up from the live-state columns: a fresh job by default, else
// one that already received service, waits in the queue or holds GPUs.
// Restored waiting and running jobs cause no event at the start, so a
// simulation built from a snapshot schedules exactly when the original would.
void Simulator::restore(int job) {
    const LiveState& live = jobs_.live;
    JobState& st = state_[job];
    const double done = live_or(live.done_fraction, job, 0.0);
    st.remaining_pool = fastest_pool_[job];
    st.remaining_s = live_or(live.remaining_s, job, (1.0 - done) * duration_on(job, st.remaining_pool));
    st.attained_gpu_s = live_or(live.attained_gpu_s, job, 0.0);
    st.service_since_promotion = live_or(live.service_since_promotion, job, st.attained_gpu_s);
    st.held_since_promotion = live_or(live.held_since_promotion, job, 0.0);
    st.queue = tiresias_queue_of(st.service_since_promotion);
    st.queue_entry = live_or(live.queue_entry, job, jobs_.submit[job]);
    st.resumed = done > 0 || st.attained_gpu_s > 0;
    outcome_.first_start[job] = live_or(live.first_start, job, kNaN);
    if (!live.running.empty() && live.running[job]) {
        restore_running(job);
    } else if (!std::isnan(live_or(live.pending_since, job, kNaN))) {
        enqueue(job, live.pending_since[job]);
        push_promotion(job);
    }
}

void Simulator::restore_running(int job) {
    const LiveState& live = jobs_.live;
    JobState& st = state_[job];
    st.resumed = false;
    const int first = live.slice_offset.empty() ? 0 : live.slice_offset[job];
    const int last = live.slice_offset.empty() ? 0 : live.slice_offset[job + 1];
    bool placed = false;
    if (first < last) {
        const int pool = live.slice_pool[first];
        st.slices.clear();
        int gpus = 0;
        for (int i = first; i < last; ++i) {
            if (live.slice_pool[i] != pool || pool < 0 || pool >= static_cast<int>(pools_.size())) {
                throw std::invalid_argument("running job " + std::to_string(job) +
                                            " is placed on more than one GPU pool or an unknown one");
            }
            st.slices.push_back({live.slice_node[i], live.slice_gpus[i]});
            gpus += live.slice_gpus[i];
        }
        placed = gpus == jobs_.gpus[job] && pools_[pool].reacquire(st.slices);
        if (placed) {
            total_free_ += jobs_.gpus[job];  // start() takes them again
            start(job, pool, now_);
        }
    } else {
        placed = try_start(job, now_);
    }
    if (!placed) {
        throw std::invalid_argument("running job " + std::to_string(job) +
                                    " does not fit the cluster at the start");
    }
    st.work_start = std::max(now_, live_or(live.work_start, job, now_));
    st.last_start = live_or(live.last_start, job, now_);
    st.lease_end = st.last_start + config_.lease_s;
    ++st.version;
    push_running_events(job);
}

void Simulator::check_jobs_fit() const {
    for (int job = 0; job < n_; ++job) {
        bool fits = false;
        for (size_t pool = 0; pool < pools_.size(); ++pool) {
            fits |= std::isfinite(duration_on(job, static_cast<int>(pool))) &&
                    jobs_.gpus[job] <= pools_[pool].capacity();
        }
        if (!fits || jobs_.gpus[job] <= 0) {
            throw std::invalid_argument("job " + std::to_string(job) + " needs " +
                                        std::to_string(jobs_.gpus[job]) +
                                        " GPUs and fits no GPU pool of the cluster");
        }
    }
}

// ---- event loop -------------------------------------------------------------

double Simulator::next_event_time() const {
    double next = heap_.empty() ? kInf : heap_.top().time;
    if (next_arrival_ < arrival_order_.size()) {
        next = std::min(next, std::max(jobs_.submit[arrival_order_[next_arrival_]], start_time_));
    }
    return next;
}

bool Simulator::run_until(double until, uint64_t max_events) {
    while (true) {
        const double time = next_event_time();
        if (time == kInf || time > until) break;
        if (max_events > 0 && events_ >= max_events) {
            budget_exhausted_ = true;
            return false;
        }
        process_batch(time);
    }
    if (unfinished_ > 0 && next_event_time() == kInf) {
        throw std::runtime_error("simulation stalled with " + std::to_string(unfinished_) +
                                 " unfinished jobs and nothing left to happen");
    }
    if (std::isfinite(until)) now_ = std::max(now_, until);
    return unfinished_ == 0;
}

// Every event at one instant is applied before the scheduler looks at the
// cluster, so the outcome does not depend on the order of simultaneous events.
// An instant whose events were all stale (a finish or lease of a job since
// preempted) is no scheduling instant: it would exist only because of how the
// simulation got there, and a simulation rebuilt from a snapshot lacks it.
void Simulator::process_batch(double time) {
    now_ = time;
    const uint64_t events_before = events_;
    while (next_arrival_ < arrival_order_.size() &&
           std::max(jobs_.submit[arrival_order_[next_arrival_]], start_time_) <= time) {
        const int job = arrival_order_[next_arrival_++];
        if (state_[job].phase != Phase::future) continue;  // started live
        ++events_;
        enqueue(job, time);
    }
    while (!heap_.empty() && heap_.top().time <= time) {
        const Event event = heap_.top();
        heap_.pop();
        if (event.version != state_[event.job].version) continue;
        ++events_;
        handle(event);
    }
    if (events_ > events_before) schedule(time);
}

void Simulator::handle(const Event& event) {
    JobState& st = state_[event.job];
    switch (event.kind) {
        case EventKind::finish:
            finish(event.job, event.time);
            break;
        case EventKind::lease:
            break;  // the job becomes preemptible; schedule() takes it from here
        case EventKind::demote:
            st.queue = std::max(st.queue + 1,
                                tiresias_queue_of(service_since_promotion_at(event.job, event.time)));
            st.queue_entry = event.time;
            push_demotion(event.job);
            break;
        case EventKind::promote:
            dequeue(event.job);
            st.queue = 0;
            st.service_since_promotion = 0;
            st.held_since_promotion = 0;
            st.queue_entry = event.time;
            enqueue(event.job, event.time);
            break;
    }
}

// ---- scheduling ---------------------------------------------------------------

// Pending jobs that fit the free GPUs in priority order would win the count in
// plan_preemptions() too, so they start first and the (costlier) planning runs
// only for what is left.
void Simulator::schedule(double time) {
    fill(time, /*backfill=*/false);
    if (pending_.empty()) return;
    if (is_preemptive(config_.policy)) {
        const Plan plan = plan_preemptions(time);
        if (!plan.victims.empty()) apply(plan, time);
    }
    fill(time, config_.backfill);
}

// Walks pending jobs and preemptible running jobs in priority order, handing
// out each pool's GPUs by count. A running job whose GPUs were handed to
// higher-priority pending jobs is a victim. Jobs inside their lease keep their
// GPUs and are not candidates, nor are running jobs that outrank every pending
// job (nothing ahead of them in the walk can take their GPUs).
Simulator::Plan Simulator::plan_preemptions(double time) const {
    const Key& best_pending = *pending_.begin();
    std::vector<Key> candidates;
    for (int job : running_) {
        if (time < state_[job].lease_end) continue;
        const Key key = key_of(job, time);
        if (best_pending < key) candidates.push_back(key);
    }
    Plan plan;
    if (candidates.empty()) return plan;
    std::sort(candidates.begin(), candidates.end());

    std::vector<int> budget(pools_.size());
    for (size_t pool = 0; pool < pools_.size(); ++pool) budget[pool] = pools_[pool].free_gpus();
    for (const Key& key : candidates) budget[state_[key.job].pool] += jobs_.gpus[key.job];

    int budget_left = std::accumulate(budget.begin(), budget.end(), 0);
    bool blocked = false;
    auto pending = pending_.begin();
    for (const Key& candidate : candidates) {
        for (; pending != pending_.end() && *pending < candidate && budget_left > 0 && !blocked; ++pending) {
            const int pool = preferred_pool_within(pending->job, budget);
            if (pool < 0) {
                blocked = !config_.backfill;
                continue;
            }
            budget[pool] -= jobs_.gpus[pending->job];
            budget_left -= jobs_.gpus[pending->job];
            plan.starts.push_back(pending->job);
        }
        int& left = budget[state_[candidate.job].pool];
        if (left >= jobs_.gpus[candidate.job]) {
            left -= jobs_.gpus[candidate.job];
            budget_left -= jobs_.gpus[candidate.job];
        } else {
            plan.victims.push_back(candidate.job);
        }
    }
    return plan;
}

// The victims' GPUs are freed tentatively and the winners placed; a victim
// whose exact GPUs are still free afterwards was not needed (fragmentation
// defeated the count) and keeps running untouched.
void Simulator::apply(const Plan& plan, double time) {
    for (int job : plan.victims) {
        pools_[state_[job].pool].release(state_[job].slices);
        total_free_ += jobs_.gpus[job];
    }
    for (int job : plan.starts) try_start(job, time);
    for (int job : plan.victims) {
        if (pools_[state_[job].pool].reacquire(state_[job].slices)) {
            total_free_ -= jobs_.gpus[job];
        } else {
            preempt(job, time, /*release_gpus=*/false);
        }
    }
}

// Starts pending jobs in priority order wherever they can be placed now;
// without backfill the first job that cannot be placed blocks the rest.
void Simulator::fill(double time, bool backfill) {
    for (auto it = pending_.begin(); it != pending_.end() && total_free_ > 0;) {
        const auto next = std::next(it);
        if (!try_start(it->job, time) && !backfill) break;
        it = next;
    }
}

bool Simulator::try_start(int job, double time) {
    if (jobs_.gpus[job] > total_free_) return false;
    JobState& st = state_[job];
    const int* order = pools_in_preference(job);
    for (size_t i = 0; i < pools_.size() && order[i] >= 0; ++i) {
        st.slices.clear();
        if (pools_[order[i]].allocate(jobs_.gpus[job], config_.placement, st.slices)) {
            start(job, order[i], time);
            return true;
        }
    }
    return false;
}

// ---- job transitions ----------------------------------------------------------

void Simulator::start(int job, int pool, double time) {
    JobState& st = state_[job];
    if (st.phase == Phase::pending) dequeue(job);
    st.phase = Phase::running;
    st.pool = pool;
    total_free_ -= jobs_.gpus[job];
    st.remaining_s = remaining_on(job, pool);
    st.remaining_pool = pool;
    st.segment_start = time;
    st.work_start = time + (st.resumed ? config_.restart_overhead_s : 0.0);
    st.resumed = false;
    st.last_start = time;
    st.lease_end = time + config_.lease_s;
    if (std::isnan(outcome_.first_start[job])) outcome_.first_start[job] = time;
    running_slot_[job] = static_cast<int>(running_.size());
    running_.push_back(job);
    ++st.version;
    push_running_events(job);
}

void Simulator::stop(int job, double time, bool release_gpus) {
    JobState& st = state_[job];
    const int gpus = jobs_.gpus[job];
    const double held = time - st.segment_start;
    st.attained_gpu_s += gpus * held;
    st.service_since_promotion += gpus * held;
    st.held_since_promotion += held;
    outcome_.busy_gpu_s[job] += gpus * held;
    outcome_.last_pool[job] = st.pool;
    st.remaining_s = std::max(0.0, st.remaining_s - std::max(0.0, time - st.work_start));
    if (release_gpus) {
        pools_[st.pool].release(st.slices);
        total_free_ += gpus;
    }
    if (record_segments_) segments_.push_back({job, st.pool, st.segment_start, time, st.slices});
    const int slot = running_slot_[job];
    running_[slot] = running_.back();
    running_slot_[running_[slot]] = slot;
    running_.pop_back();
    running_slot_[job] = -1;
    ++st.version;
}

void Simulator::finish(int job, double time) {
    stop(job, time, /*release_gpus=*/true);
    state_[job].phase = Phase::done;
    state_[job].remaining_s = 0;
    outcome_.finish[job] = time;
    --unfinished_;
}

void Simulator::preempt(int job, double time, bool release_gpus) {
    stop(job, time, release_gpus);
    state_[job].resumed = true;
    ++outcome_.preemptions[job];
    enqueue(job, time);
    push_promotion(job);
}

void Simulator::enqueue(int job, double time) {
    JobState& st = state_[job];
    st.phase = Phase::pending;
    st.pending_since = time;
    st.pending_key = key_of(job, time);
    pending_.insert(st.pending_key);
}

void Simulator::dequeue(int job) { pending_.erase(state_[job].pending_key); }

void Simulator::set_config(const Config& config) {
    config_ = config;
    rekey_all();
    schedule(now_);
}

void Simulator::set_estimates(std::vector<double> estimates) {
    if (estimates.size() != jobs_.estimate.size()) {
        throw std::invalid_argument("set_estimates needs one estimate per job");
    }
    jobs_.estimate = std::move(estimates);
    rekey_all();
}

// Re-derives every unfinished job's queue and priority under the current
// configuration and estimates, and re-arms its timed events.
void Simulator::rekey_all() {
    pending_.clear();
    for (int job = 0; job < n_; ++job) {
        JobState& st = state_[job];
        if (st.phase != Phase::pending && st.phase != Phase::running) continue;
        st.queue = tiresias_queue_of(service_since_promotion_at(job, now_));
        if (st.phase == Phase::pending) {
            st.pending_key = key_of(job, now_);
            pending_.insert(st.pending_key);
            ++st.version;
            push_promotion(job);
        } else {
            st.lease_end = st.last_start + config_.lease_s;
            ++st.version;
            push_running_events(job);
        }
    }
}

Snapshot Simulator::snapshot(bool include_future) const {
    Snapshot snap;
    LiveState& live = snap.live;
    live.slice_offset.push_back(0);
    for (int job = 0; job < n_; ++job) {
        const JobState& st = state_[job];
        if (st.phase == Phase::done || (st.phase == Phase::future && !include_future)) continue;
        const bool running = st.phase == Phase::running;
        const int pool = running ? st.pool : st.remaining_pool;
        const double left =
            running ? std::max(0.0, st.remaining_s - std::max(0.0, now_ - st.work_start)) : st.remaining_s;
        const int fastest = fastest_pool_[job];
        snap.job.push_back(job);
        live.remaining_s.push_back(pool == fastest ? left
                                                   : left * duration_on(job, fastest) / duration_on(job, pool));
        snap.tiresias_queue.push_back(st.queue);
        snap.preemptions.push_back(outcome_.preemptions[job]);
        live.attained_gpu_s.push_back(attained_at(job, now_));
        live.done_fraction.push_back(std::clamp(1.0 - left / duration_on(job, pool), 0.0, 1.0));
        live.running.push_back(running);
        live.service_since_promotion.push_back(service_since_promotion_at(job, now_));
        live.held_since_promotion.push_back(st.held_since_promotion +
                                            (running ? now_ - st.segment_start : 0.0));
        live.queue_entry.push_back(st.phase == Phase::future ? jobs_.submit[job] : st.queue_entry);
        live.pending_since.push_back(st.phase == Phase::pending ? st.pending_since : kNaN);
        live.first_start.push_back(outcome_.first_start[job]);
        live.work_start.push_back(running ? std::max(st.work_start, now_) : kNaN);
        live.last_start.push_back(running ? st.last_start : kNaN);
        if (running) {
            for (const Slice& slice : st.slices) {
                live.slice_pool.push_back(st.pool);
                live.slice_node.push_back(slice.node);
                live.slice_gpus.push_back(slice.gpus);
            }
        }
        live.slice_offset.push_back(static_cast<int>(live.slice_node.size()));
    }
    return snap;
}

// ---- priorities -----------------------------------------------------------------

Simulator::Key Simulator::key_of(int job, double time) const {
    const JobState& st = state_[job];
    const double submit = jobs_.submit[job];
    const double estimate = jobs_.estimate[job];
    const int tier = st.phase == Phase::running ? 0 : 1;
    switch (config_.policy) {
        case Policy::fifo:
            return {submit, tier, 0.0, job};
        case Policy::sjf:
            return {estimate, tier, submit, job};
        case Policy::qssf:
            return {estimate * jobs_.gpus[job], tier, submit, job};
        case Policy::srtf:
            return {estimate * remaining_fraction_at(job, time), tier, submit, job};
        case Policy::las:
            return {attained_at(job, time), tier, submit, job};
        case Policy::tiresias:
            return {static_cast<double>(st.queue), tier, st.queue_entry, job};
        case Policy::edf:
            return {deadline_of(job), tier, submit, job};
        case Policy::lst:  // latest start time: the deadline less the estimated time still needed
            return {deadline_of(job) - estimate * remaining_fraction_at(job, time), tier, submit, job};
    }
    throw std::logic_error("unknown policy");
}

double Simulator::deadline_of(int job) const {
    if (jobs_.deadline.empty() || std::isnan(jobs_.deadline[job])) return kInf;
    return jobs_.deadline[job];
}

double Simulator::attained_at(int job, double time) const {
    const JobState& st = state_[job];
    if (st.phase != Phase::running) return st.attained_gpu_s;
    return st.attained_gpu_s + jobs_.gpus[job] * (time - st.segment_start);
}

double Simulator::service_since_promotion_at(int job, double time) const {
    const JobState& st = state_[job];
    if (st.phase != Phase::running) return st.service_since_promotion;
    return st.service_since_promotion + jobs_.gpus[job] * (time - st.segment_start);
}

double Simulator::remaining_fraction_at(int job, double time) const {
    const JobState& st = state_[job];
    double left = st.remaining_s;
    if (st.phase == Phase::running) left -= std::max(0.0, time - st.work_start);
    return std::max(0.0, left) / duration_on(job, st.remaining_pool);
}

double Simulator::duration_on(int job, int pool) const {
    return jobs_.duration[static_cast<size_t>(job) * pools_.size() + pool];
}

double Simulator::remaining_on(int job, int pool) const {
    const JobState& st = state_[job];
    if (pool == st.remaining_pool) return st.remaining_s;
    return st.remaining_s * duration_on(job, pool) / duration_on(job, st.remaining_pool);
}

const int* Simulator::pools_in_preference(int job) const {
    return &pool_order_[static_cast<size_t>(job) * pools_.size()];
}

int Simulator::preferred_pool_within(int job, const std::vector<int>& budget) const {
    const int* order = pools_in_preference(job);
    for (size_t i = 0; i < pools_.size() && order[i] >= 0; ++i) {
        if (budget[order[i]] >= jobs_.gpus[job]) return order[i];
    }
    return -1;
}

// A job whose service reached a limit up to rounding is in the next queue: a
// demotion event lands on the limit only up to rounding, and a queue derived
// again later (a new configuration, a snapshot) must agree with it.
int Simulator::tiresias_queue_of(double service) const {
    const auto& limits = config_.queue_thresholds_gpu_s;
    int queue = 0;
    while (queue < static_cast<int>(limits.size()) &&
           service >= limits[queue] * (1.0 - kQueueLimitTolerance)) {
        ++queue;
    }
    return queue;
}

// ---- future events ------------------------------------------------------------

void Simulator::push(double time, int job, EventKind kind) {
    heap_.push({std::max(time, now_), seq_++, job, state_[job].version, kind});
}

void Simulator::push_running_events(int job) {
    const JobState& st = state_[job];
    const double finish_at = st.work_start + st.remaining_s;
    push(finish_at, job, EventKind::finish);
    if (is_preemptive(config_.policy) && st.lease_end > now_ && st.lease_end < finish_at) {
        push(st.lease_end, job, EventKind::lease);
    }
    push_demotion(job);
}

void Simulator::push_demotion(int job) {
    const JobState& st = state_[job];
    const auto& limits = config_.queue_thresholds_gpu_s;
    if (config_.policy != Policy::tiresias || st.queue >= static_cast<int>(limits.size())) return;
    const double at = st.segment_start + (limits[st.queue] - st.service_since_promotion) / jobs_.gpus[job];
    if (at < st.work_start + st.remaining_s) push(at, job, EventKind::demote);
}

// Tiresias starvation rule: a job waiting in a lower queue for `factor` times
// as long as it has run since its last promotion goes back to the top queue.
void Simulator::push_promotion(int job) {
    const JobState& st = state_[job];
    if (config_.policy != Policy::tiresias || config_.starvation_factor <= 0 || st.queue == 0 ||
        st.held_since_promotion <= 0) {
        return;
    }
    push(st.pending_since + config_.starvation_factor * st.held_since_promotion, job,
         EventKind::promote);
}

}  // namespace itercast::sim
