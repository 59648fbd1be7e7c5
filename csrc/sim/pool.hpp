#pragma once
// One GPU type: identical nodes with the same number of GPUs each, and the
// bookkeeping to place a job on them consolidated or spread.
#include <set>
#include <vector>

#include "sim/config.hpp"

namespace itercast::sim {

struct Slice {
    int node;
    int gpus;
};

class Pool {
public:
    Pool(int nodes, int gpus_per_node);

    int nodes() const { return static_cast<int>(free_.size()); }
    int gpus_per_node() const { return gpus_per_node_; }
    int capacity() const { return nodes() * gpus_per_node_; }
    int free_gpus() const { return total_free_; }

    // Appends the slices taken to `out` and returns true, or leaves the pool
    // untouched and returns false when the job cannot be placed now.
    bool allocate(int gpus, Placement placement, std::vector<Slice>& out);
    void release(const std::vector<Slice>& slices);
    // Takes exactly these slices back if they are all still free.
    bool reacquire(const std::vector<Slice>& slices);

private:
    bool allocate_consolidated(int gpus, std::vector<Slice>& out);
    bool allocate_spread(int gpus, std::vector<Slice>& out);
    void set_free(int node, int free);

    int gpus_per_node_;
    int total_free_;
    std::vector<int> free_;  // free GPUs per node
    // Nodes grouped by their free GPUs, in node order: a placement depends only
    // on how many GPUs each node has free, never on the order nodes were
    // freed in, so a cluster rebuilt from a snapshot places jobs alike.
    std::vector<std::set<int>> by_free_;
};

}  // namespace itercast::sim
