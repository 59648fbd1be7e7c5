#pragma once
// Scheduling policy configuration. The Python layer (itercast.sim.config) owns
// the defaults and the documentation of every field; this is its mirror.
#include <vector>

namespace itercast::sim {

enum class Policy { fifo, sjf, srtf, las, tiresias, qssf, edf, lst };
enum class Placement { consolidated, spread };

inline bool is_preemptive(Policy policy) {
    return policy == Policy::srtf || policy == Policy::las || policy == Policy::tiresias;
}

struct Config {
    Policy policy = Policy::fifo;
    Placement placement = Placement::consolidated;
    bool backfill = true;
    double restart_overhead_s = 0.0;
    double lease_s = 0.0;
    std::vector<double> queue_thresholds_gpu_s;  // Tiresias: ascending, one fewer than queues
    double starvation_factor = 0.0;              // Tiresias: 0 disables promotion
};

}  // namespace itercast::sim
