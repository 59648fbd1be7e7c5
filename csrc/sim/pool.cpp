#include "sim/pool.hpp"

#include <stdexcept>
#include <unordered_map>

namespace itercast::sim {

Pool::Pool(int nodes, int gpus_per_node)
    : gpus_per_node_(gpus_per_node),
      total_free_(nodes * gpus_per_node),
      free_(nodes, gpus_per_node),
      by_free_(gpus_per_node + 1) {
    if (nodes <= 0 || gpus_per_node <= 0) throw std::invalid_argument("a pool needs nodes and GPUs");
    for (int node = 0; node < nodes; ++node) by_free_[gpus_per_node].insert(node);
}

void Pool::set_free(int node, int free) {
    by_free_[free_[node]].erase(node);
    total_free_ += free - free_[node];
    free_[node] = free;
    by_free_[free].insert(node);
}

bool Pool::allocate(int gpus, Placement placement, std::vector<Slice>& out) {
    if (gpus > total_free_) return false;
    return placement == Placement::consolidated ? allocate_consolidated(gpus, out)
                                                : allocate_spread(gpus, out);
}

// Fewest nodes: a job that fits in one node takes the fullest node that still
// has room (best fit, which keeps whole nodes free for big jobs); a bigger job
// needs ceil(gpus / gpus_per_node) nodes and waits until that many can hold it.
bool Pool::allocate_consolidated(int gpus, std::vector<Slice>& out) {
    if (gpus <= gpus_per_node_) {
        for (int free = gpus; free <= gpus_per_node_; ++free) {
            if (by_free_[free].empty()) continue;
            int node = *by_free_[free].begin();
            set_free(node, free - gpus);
            out.push_back({node, gpus});
            return true;
        }
        return false;
    }
    const int needed_nodes = (gpus + gpus_per_node_ - 1) / gpus_per_node_;
    std::vector<int> chosen;
    int room = 0;
    for (int free = gpus_per_node_; free > 0 && static_cast<int>(chosen.size()) < needed_nodes; --free) {
        for (int node : by_free_[free]) {
            chosen.push_back(node);
            room += free;
            if (static_cast<int>(chosen.size()) == needed_nodes) break;
        }
    }
    if (room < gpus) return false;
    int remaining = gpus;
    for (int node : chosen) {
        int take = std::min(free_[node], remaining);
        set_free(node, free_[node] - take);
        out.push_back({node, take});
        remaining -= take;
    }
    return true;
}

// One GPU from each of the emptiest nodes in turn, so a job touches as many
// nodes as it has GPUs whenever the cluster allows.
bool Pool::allocate_spread(int gpus, std::vector<Slice>& out) {
    std::unordered_map<int, int> taken;
    std::vector<int> round;
    int remaining = gpus;
    while (remaining > 0) {
        round.clear();
        for (int free = gpus_per_node_; free > 0 && static_cast<int>(round.size()) < remaining; --free) {
            for (int node : by_free_[free]) {
                round.push_back(node);
                if (static_cast<int>(round.size()) == remaining) break;
            }
        }
        for (int node : round) {
            set_free(node, free_[node] - 1);
            ++taken[node];
        }
        remaining -= static_cast<int>(round.size());
    }
    for (const auto& [node, count] : taken) out.push_back({node, count});
    return true;
}

void Pool::release(const std::vector<Slice>& slices) {
    for (const Slice& slice : slices) set_free(slice.node, free_[slice.node] + slice.gpus);
}

bool Pool::reacquire(const std::vector<Slice>& slices) {
    for (const Slice& slice : slices) {
        if (free_[slice.node] < slice.gpus) return false;
    }
    for (const Slice& slice : slices) set_free(slice.node, free_[slice.node] - slice.gpus);
    return true;
}

}  // namespace itercast::sim
