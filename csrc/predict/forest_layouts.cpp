// The fast paths' layouts, built once from the parsed trees.
#include "predict/forest_layouts.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace itercast::predict {

FeatureSlots build_feature_slots(const TreeLayout& tree, const std::vector<std::int32_t>& linear_features,
                                 std::size_t num_features) {
    std::vector<char> used(num_features, 0);
    for (const TreeNode& node : tree.nodes) {
        if (!(node.feature_flags & kLeaf)) used[node.feature_flags >> 8] = 1;
    }
    // LightGBM's linear leaves read their branch's split features, but the fast paths must not
    // rely on it: a linear feature no split reads is transposed too
    for (std::int32_t feature : linear_features) used[static_cast<std::size_t>(feature)] = 1;
    FeatureSlots slots;
    slots.slot_of.assign(used.size(), 0);
    for (std::size_t j = 0; j < used.size(); ++j) {
        if (!used[j]) continue;
        slots.slot_of[j] = static_cast<std::uint32_t>(slots.used.size());
        slots.used.push_back(static_cast<std::uint32_t>(j));
    }
    return slots;
}

void build_linear_leaves(LinearLayout& linear, const FeatureSlots& slots, bool has_linear) {
    linear.slot.clear();
    for (std::int32_t feature : linear.feature) linear.slot.push_back(slots.slot_of[static_cast<std::size_t>(feature)]);
    linear.leaves.clear();
    if (!has_linear) return;
    for (std::size_t l = 0; l < linear.constant.size(); ++l) {
        linear.leaves.push_back({linear.constant[l], linear.begin[l], linear.begin[l + 1]});
    }
}

FastLayout build_fast_layout(const TreeLayout& tree, const FeatureSlots& slots) {
    FastLayout fast;
    std::vector<std::pair<std::int32_t, std::int32_t>> queue;  // (node, its slot), breadth first
    for (std::int32_t root : tree.roots) {
        const auto top = static_cast<std::int32_t>(fast.nodes.size());
        fast.roots.push_back(top);
        fast.nodes.push_back({});
        queue.assign(1, {root, top});
        for (std::size_t q = 0; q < queue.size(); ++q) {
            const auto [index, at] = queue[q];
            const TreeNode& node = tree.nodes[static_cast<std::size_t>(index)];
            if (node.feature_flags & kLeaf) {
                fast.nodes[static_cast<std::size_t>(at)] = {std::numeric_limits<float>::infinity(), 0, at,
                                                            tree.node_leaf[static_cast<std::size_t>(index)]};
                continue;
            }
            const auto pair = static_cast<std::int32_t>(fast.nodes.size());
            fast.nodes.resize(fast.nodes.size() + 2);
            fast.nodes[static_cast<std::size_t>(at)] = {
                node.threshold, static_cast<std::uint32_t>(slots.slot_of[node.feature_flags >> 8] * kGroup), pair, -1};
            queue.push_back({node.left, pair});
            queue.push_back({node.right, pair + 1});
        }
    }
    return fast;
}

namespace {

// Appends one tree's splits and leaves, depth-first, left first: leaves come in left-to-right order,
// numbered so from 0. Returns its leaf count.
int add_bit_tree(const TreeLayout& tree, std::int32_t root, const FeatureSlots& slots, const LinearLayout* linear,
                 BitLayout& bits) {
    int leaves = 0;
    std::vector<std::pair<std::int32_t, int>> stack{{root, 0}};  // (node, 0 enter / 1 left done)
    std::vector<int> left_start;  // per open split: its first leaf number
    std::vector<std::size_t> open;
    while (!stack.empty()) {
        auto [index, phase] = stack.back();
        stack.pop_back();
        const TreeNode& node = tree.nodes[static_cast<std::size_t>(index)];
        if (node.feature_flags & kLeaf) {
            const std::int32_t leaf = tree.node_leaf[static_cast<std::size_t>(index)];
            bits.leaf_value.push_back(tree.leaf_value[static_cast<std::size_t>(leaf)]);
            bits.leaf_global.push_back(leaf);
            if (linear) bits.linear.push_back(linear->leaves[static_cast<std::size_t>(leaf)]);
            ++leaves;
            continue;
        }
        if (phase == 0) {
            open.push_back(bits.splits.size());
            left_start.push_back(leaves);
            bits.splits.push_back({slots.slot_of[node.feature_flags >> 8], node.threshold, 0, 0});
            stack.push_back({index, 1});
            stack.push_back({node.left, 0});
        } else {
            // the left subtree's leaves are [left_start, leaves): a failed test clears them
            const int lo = left_start.back(), hi = leaves;
            left_start.pop_back();
            std::uint64_t left = 0;
            for (int l = lo; l < hi && l < 64; ++l) left |= std::uint64_t{1} << l;
            const std::uint64_t keep = ~left;
            bits.splits[open.back()].keep_low = static_cast<std::int32_t>(static_cast<std::uint32_t>(keep));
            bits.splits[open.back()].keep_high = static_cast<std::int32_t>(static_cast<std::uint32_t>(keep >> 32));
            open.pop_back();
            stack.push_back({node.right, 0});
        }
    }
    return leaves;
}

// Each distinct (slot, threshold) once, and each split's index into them.
void build_bit_tests(BitLayout& bits) {
    for (const BitSplit& split : bits.splits) bits.tests.push_back({split.slot, split.threshold});
    auto before = [](const BitTest& a, const BitTest& b) {
        return a.slot != b.slot ? a.slot < b.slot : a.threshold < b.threshold;
    };
    auto same = [](const BitTest& a, const BitTest& b) { return a.slot == b.slot && a.threshold == b.threshold; };
    std::sort(bits.tests.begin(), bits.tests.end(), before);
    bits.tests.erase(std::unique(bits.tests.begin(), bits.tests.end(), same), bits.tests.end());
    for (const BitSplit& split : bits.splits) {
        const BitTest key{split.slot, split.threshold};
        const auto at = std::lower_bound(bits.tests.begin(), bits.tests.end(), key, before);
        bits.test_splits.push_back({static_cast<std::uint32_t>(at - bits.tests.begin()), split.keep_low,
                                    split.keep_high});
    }
}

}  // namespace

BitLayout build_bit_layout(const TreeLayout& tree, const FeatureSlots& slots, const LinearLayout* linear) {
    BitLayout bits;
    bits.usable = true;
    bits.begin.assign(1, 0);
    for (std::int32_t root : tree.roots) {
        bits.leaf_base.push_back(static_cast<std::uint32_t>(bits.leaf_value.size()));
        const int leaves = add_bit_tree(tree, root, slots, linear, bits);
        if (leaves > 64) bits.usable = false;
        bits.narrow.push_back(leaves <= 32);
        bits.begin.push_back(static_cast<std::uint32_t>(bits.splits.size()));
    }
    if (!bits.usable) {
        BitLayout unusable;
        unusable.narrow = std::move(bits.narrow);
        return unusable;
    }
    build_bit_tests(bits);
    return bits;
}

}  // namespace itercast::predict
