#include "predict/forest.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "platform/simd.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ITERCAST_NO_AVX512)
#include <immintrin.h>
#define ITERCAST_AVX512 1
#endif

namespace itercast::predict {
namespace {

// LightGBM's kZeroThreshold: its dense-row reader drops |x| <= this, so such values predict as 0.
constexpr float kZeroThreshold = 1e-35f;
constexpr std::uint32_t kLeaf = 32;  // node flag: a leaf's sink (both children point to itself)

struct Line {
    std::string_view text;
    std::size_t number;  // 1-based
};

class Lines {
public:
    explicit Lines(std::string_view text) : text_(text) {}
    bool next(Line& line) {
        if (pos_ >= text_.size()) return false;
        std::size_t end = text_.find('\n', pos_);
        if (end == std::string_view::npos) end = text_.size();
        std::string_view s = text_.substr(pos_, end - pos_);
        if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
        pos_ = end + 1;
        line = {s, ++number_};
        return true;
    }
    std::size_t number() const { return number_; }

private:
    std::string_view text_;
    std::size_t pos_ = 0;
    std::size_t number_ = 0;
};

[[noreturn]] void fail(std::size_t line, const std::string& what) {
    throw ForestError("LightGBM model text, line " + std::to_string(line) + ": " + what);
}

std::string excerpt(std::string_view s) {
    return std::string(s.substr(0, 60)) + (s.size() > 60 ? "..." : "");
}

template <class T>
T parse_number(std::string_view token, std::size_t line, std::string_view key) {
    T value{};
    const char* first = token.data();
    const char* last = token.data() + token.size();
    if (!token.empty() && token.front() == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) {
        fail(line, std::string(key) + ": '" + excerpt(token) + "' is not a number");
    }
    return value;
}

template <class T>
std::vector<T> parse_array(std::string_view value, std::size_t line, std::string_view key) {
    std::vector<T> out;
    std::size_t i = 0;
    while (i < value.size()) {
        while (i < value.size() && value[i] == ' ') ++i;
        if (i >= value.size()) break;
        std::size_t j = i;
        while (j < value.size() && value[j] != ' ') ++j;
        out.push_back(parse_number<T>(value.substr(i, j - i), line, key));
        i = j;
    }
    return out;
}

struct Field {
    std::string_view value;
    std::size_t line = 0;
    bool present = false;
};

struct TreeText {
    std::size_t line = 0;  // of "Tree=k"
    Field num_leaves, num_cat, split_feature, threshold, decision_type, left_child, right_child,
        leaf_value, is_linear, leaf_const, num_features, leaf_features, leaf_coeff, cat_boundaries,
        cat_threshold;

    Field* field(std::string_view key) {
        if (key == "num_leaves") return &num_leaves;
        if (key == "num_cat") return &num_cat;
        if (key == "split_feature") return &split_feature;
        if (key == "threshold") return &threshold;
        if (key == "decision_type") return &decision_type;
        if (key == "left_child") return &left_child;
        if (key == "right_child") return &right_child;
        if (key == "leaf_value") return &leaf_value;
        if (key == "is_linear") return &is_linear;
        if (key == "leaf_const") return &leaf_const;
        if (key == "num_features") return &num_features;
        if (key == "leaf_features") return &leaf_features;
        if (key == "leaf_coeff") return &leaf_coeff;
        if (key == "cat_boundaries") return &cat_boundaries;
        if (key == "cat_threshold") return &cat_threshold;
        return nullptr;
    }
};

template <class T>
std::vector<T> array_of(const TreeText& tree, const Field& f, std::string_view key, std::size_t count) {
    if (!f.present) {
        if (count == 0) return {};
        fail(tree.line, "tree lacks '" + std::string(key) + "'");
    }
    std::vector<T> values = parse_array<T>(f.value, f.line, key);
    if (values.size() != count) {
        fail(f.line, std::string(key) + " has " + std::to_string(values.size()) + " values, expected " +
                         std::to_string(count));
    }
    return values;
}

template <class T>
T scalar_of(const TreeText& tree, const Field& f, std::string_view key) {
    if (!f.present) fail(tree.line, "tree lacks '" + std::string(key) + "'");
    return parse_number<T>(f.value, f.line, key);
}

// The largest float <= t: for any float x, x <= t exactly when x <= round_down(t).
float round_down(double t) {
    if (std::isnan(t)) return std::numeric_limits<float>::quiet_NaN();
    if (t >= static_cast<double>(std::numeric_limits<float>::max())) return std::numeric_limits<float>::max();
    if (t < -static_cast<double>(std::numeric_limits<float>::max())) return -std::numeric_limits<float>::infinity();
    float f = static_cast<float>(t);
    if (static_cast<double>(f) > t) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
}

}  // namespace

Forest Forest::parse(std::string_view text) {
    Forest forest;
    Lines lines(text);
    Line line{{}, 0};
    // ---- header ----
    while (lines.next(line) && line.text.empty()) {
    }
    if (line.number == 0 || line.text != "tree") {
        fail(line.number ? line.number : 1, "expected 'tree' (a LightGBM model_to_string() text), found '" +
                                                excerpt(line.text) + "'");
    }
    bool have_max_feature = false;
    bool in_trees = false;
    while (lines.next(line)) {
        std::string_view s = line.text;
        if (s.rfind("Tree=", 0) == 0) {
            in_trees = true;
            break;
        }
        if (s == "end of trees") break;
        if (s == "average_output") {
            forest.average_output_ = true;
            continue;
        }
        std::size_t eq = s.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view key = s.substr(0, eq), value = s.substr(eq + 1);
        if (key == "num_class" && parse_number<int>(value, line.number, key) != 1) {
            fail(line.number, "num_class=" + std::string(value) + ": only single-output regression models are read");
        }
        if (key == "num_tree_per_iteration" && parse_number<int>(value, line.number, key) != 1) {
            fail(line.number, "num_tree_per_iteration=" + std::string(value) +
                                  ": only single-output regression models are read");
        }
        if (key == "objective") forest.objective_ = std::string(value.substr(0, value.find(' ')));
        if (key == "max_feature_idx") {
            int max_feature = parse_number<int>(value, line.number, key);
            if (max_feature < -1 || max_feature >= (1 << 23)) {
                fail(line.number, "max_feature_idx=" + std::string(value) + " is out of range");
            }
            forest.num_features_ = max_feature + 1;
            have_max_feature = true;
        }
    }
    if (!have_max_feature) fail(line.number, "the header lacks max_feature_idx");
    if (!in_trees) fail(line.number, "no 'Tree=' section: the model has no trees");

    // ---- trees ----
    bool ended = false;
    while (!ended) {
        TreeText tree;
        tree.line = line.number;
        {
            std::string_view id = line.text.substr(5);
            if (parse_number<long>(id, line.number, "Tree") != static_cast<long>(forest.roots_.size())) {
                fail(line.number, "expected Tree=" + std::to_string(forest.roots_.size()) + ", found '" +
                                      excerpt(line.text) + "'");
            }
        }
        bool next_tree = false;
        while (lines.next(line)) {
            std::string_view s = line.text;
            if (s.empty()) continue;
            if (s.rfind("Tree=", 0) == 0) {
                next_tree = true;
                break;
            }
            if (s == "end of trees") {
                ended = true;
                break;
            }
            std::size_t eq = s.find('=');
            if (eq == std::string_view::npos) fail(line.number, "expected key=value, found '" + excerpt(s) + "'");
            if (Field* f = tree.field(s.substr(0, eq))) *f = {s.substr(eq + 1), line.number, true};
        }
        if (!next_tree && !ended) fail(lines.number(), "the text ends inside Tree=" +
                                                           std::to_string(forest.roots_.size()) +
                                                           " (no 'end of trees')");

        // -- one tree into the flat arrays --
        const int leaves = scalar_of<int>(tree, tree.num_leaves, "num_leaves");
        if (leaves < 1 || leaves > (1 << 24)) fail(tree.num_leaves.line, "num_leaves must be >= 1");
        const std::size_t inner = static_cast<std::size_t>(leaves - 1);
        const int num_cat = tree.num_cat.present ? scalar_of<int>(tree, tree.num_cat, "num_cat") : 0;
        if (num_cat < 0) fail(tree.num_cat.line, "num_cat must be >= 0");
        auto split_feature = array_of<int>(tree, tree.split_feature, "split_feature", inner);
        auto threshold = array_of<double>(tree, tree.threshold, "threshold", inner);
        auto decision_type = array_of<int>(tree, tree.decision_type, "decision_type", inner);
        auto left = array_of<int>(tree, tree.left_child, "left_child", inner);
        auto right = array_of<int>(tree, tree.right_child, "right_child", inner);
        auto leaf_value = array_of<double>(tree, tree.leaf_value, "leaf_value", static_cast<std::size_t>(leaves));
        const bool linear = tree.is_linear.present && scalar_of<int>(tree, tree.is_linear, "is_linear") != 0;
        std::vector<double> leaf_const, coeff;
        std::vector<int> counts, features;
        if (linear) {
            leaf_const = array_of<double>(tree, tree.leaf_const, "leaf_const", static_cast<std::size_t>(leaves));
            counts = array_of<int>(tree, tree.num_features, "num_features", static_cast<std::size_t>(leaves));
            std::size_t total = 0;
            for (int c : counts) {
                if (c < 0) fail(tree.num_features.line, "num_features: negative count");
                total += static_cast<std::size_t>(c);
            }
            features = array_of<int>(tree, tree.leaf_features, "leaf_features", total);
            coeff = array_of<double>(tree, tree.leaf_coeff, "leaf_coeff", total);
            for (int f : features) {
                if (f < 0 || f >= forest.num_features_) {
                    fail(tree.leaf_features.line, "leaf_features: feature " + std::to_string(f) +
                                                      " is outside 0.." + std::to_string(forest.num_features_ - 1));
                }
            }
            forest.has_linear_ = true;
        }
        std::vector<int> cat_boundaries;
        std::vector<std::uint32_t> cat_threshold;
        if (num_cat > 0) {
            cat_boundaries = array_of<int>(tree, tree.cat_boundaries, "cat_boundaries",
                                           static_cast<std::size_t>(num_cat) + 1);
            if (!tree.cat_threshold.present) fail(tree.line, "tree lacks 'cat_threshold'");
            cat_threshold = parse_array<std::uint32_t>(tree.cat_threshold.value, tree.cat_threshold.line,
                                                       "cat_threshold");
            if (cat_boundaries.front() != 0 ||
                cat_boundaries.back() != static_cast<int>(cat_threshold.size()) ||
                !std::is_sorted(cat_boundaries.begin(), cat_boundaries.end())) {
                fail(tree.cat_boundaries.line, "cat_boundaries do not delimit the " +
                                                   std::to_string(cat_threshold.size()) + " cat_threshold words");
            }
        }

        // Nodes in depth-first order, each leaf followed by its sink; check it is a tree.
        const std::size_t leaf_base = forest.leaf_value_.size();
        std::vector<char> seen_inner(inner, 0), seen_leaf(static_cast<std::size_t>(leaves), 0);
        struct Pending {
            int child;          // LightGBM index: >= 0 inner, < 0 ~leaf
            std::int64_t slot;  // where to write our node index: node*2 + (0 left, 1 right); -1 root
            int depth;
        };
        std::vector<Pending> stack{{leaves > 1 ? 0 : ~0, -1, 0}};
        int max_depth = 0;
        std::int32_t root = 0;
        while (!stack.empty()) {
            Pending p = stack.back();
            stack.pop_back();
            const auto index = static_cast<std::int32_t>(forest.nodes_.size());
            if (p.slot < 0) {
                root = index;
            } else {
                Node& parent = forest.nodes_[static_cast<std::size_t>(p.slot >> 1)];
                (p.slot & 1 ? parent.right : parent.left) = index;
            }
            Node node{};
            if (p.child < 0) {
                const int leaf = ~p.child;
                if (leaf >= leaves || seen_leaf[static_cast<std::size_t>(leaf)]) {
                    fail(tree.left_child.line, "Tree=" + std::to_string(forest.roots_.size()) +
                                                   ": child ~" + std::to_string(leaf) +
                                                   (leaf >= leaves ? " is not a leaf of it" : " is reached twice"));
                }
                seen_leaf[static_cast<std::size_t>(leaf)] = 1;
                node.threshold = 0.0f;
                node.feature_flags = kLeaf;
                node.left = node.right = index;
                forest.nodes_.push_back(node);
                forest.node_leaf_.push_back(static_cast<std::int32_t>(leaf_base + static_cast<std::size_t>(leaf)));
                max_depth = std::max(max_depth, p.depth);
                continue;
            }
            const auto k = static_cast<std::size_t>(p.child);
            if (k >= inner || seen_inner[k]) {
                fail(tree.left_child.line, "Tree=" + std::to_string(forest.roots_.size()) + ": child " +
                                               std::to_string(p.child) +
                                               (k >= inner ? " is not a node of it" : " is reached twice"));
            }
            seen_inner[k] = 1;
            const int feature = split_feature[k];
            if (feature < 0 || feature >= forest.num_features_) {
                fail(tree.split_feature.line, "split_feature " + std::to_string(feature) + " is outside 0.." +
                                                  std::to_string(forest.num_features_ - 1));
            }
            const int dt = decision_type[k];
            const int missing = (dt >> 2) & 3;
            if (dt < 0 || dt > 15 || missing == 3) {
                fail(tree.decision_type.line, "decision_type " + std::to_string(dt) + " is not one LightGBM writes");
            }
            std::uint32_t flags = 0;
            const bool default_left = dt & 2;
            if (default_left) flags |= kDefaultLeft;
            if (dt & 1) {
                flags |= kCategorical;
                const double c = threshold[k];
                if (!(c >= 0) || c >= num_cat || c != std::floor(c)) {
                    fail(tree.threshold.line, "categorical split " + std::to_string(k) + ": threshold " +
                                                  std::to_string(c) + " is not a category set of this tree");
                }
                const auto cat = static_cast<std::size_t>(c);
                node.cat = static_cast<std::uint32_t>(forest.cat_ranges_.size() / 2);
                forest.cat_ranges_.push_back(
                    static_cast<std::uint32_t>(forest.cat_bits_.size() + static_cast<std::size_t>(cat_boundaries[cat])));
                forest.cat_ranges_.push_back(static_cast<std::uint32_t>(cat_boundaries[cat + 1] - cat_boundaries[cat]));
                if (missing == 2) flags |= kNanMissing;
                forest.has_categorical_ = true;
                forest.has_special_ = true;
            } else {
                node.threshold = round_down(threshold[k]);
                if (missing == 1) {
                    flags |= kZeroMissing;
                    if (default_left) flags |= kNanLeft;
                    forest.has_special_ = true;
                } else if (missing == 2) {
                    flags |= kNanMissing;
                    if (default_left) flags |= kNanLeft;
                } else if (0.0 <= threshold[k]) {
                    flags |= kNanLeft;  // NaN reads as 0
                }
            }
            node.feature_flags = static_cast<std::uint32_t>(feature) << 8 | flags;
            forest.nodes_.push_back(node);
            forest.node_leaf_.push_back(-1);
            const std::int64_t me = static_cast<std::int64_t>(index) * 2;
            // right pushed first so that the left subtree follows its parent
            stack.push_back({right[k], me + 1, p.depth + 1});
            stack.push_back({left[k], me, p.depth + 1});
        }
        if (std::find(seen_inner.begin(), seen_inner.end(), 0) != seen_inner.end() ||
            std::find(seen_leaf.begin(), seen_leaf.end(), 0) != seen_leaf.end()) {
            fail(tree.left_child.line, "Tree=" + std::to_string(forest.roots_.size()) +
                                           ": some nodes or leaves are not reachable from the root");
        }
        forest.roots_.push_back(root);
        forest.depth_.push_back(max_depth);
        if (num_cat > 0) forest.cat_bits_.insert(forest.cat_bits_.end(), cat_threshold.begin(), cat_threshold.end());
        forest.leaf_value_.insert(forest.leaf_value_.end(), leaf_value.begin(), leaf_value.end());
        for (int l = 0; l < leaves; ++l) {
            forest.leaf_const_.push_back(linear ? leaf_const[static_cast<std::size_t>(l)]
                                                : leaf_value[static_cast<std::size_t>(l)]);
            if (forest.linear_begin_.empty()) forest.linear_begin_.push_back(0);
            forest.linear_begin_.push_back(forest.linear_begin_.back());
        }
        if (linear) {
            std::size_t at = 0;
            for (int l = 0; l < leaves; ++l) {
                const auto c = static_cast<std::size_t>(counts[static_cast<std::size_t>(l)]);
                forest.linear_feature_.insert(forest.linear_feature_.end(), features.begin() + static_cast<long>(at),
                                              features.begin() + static_cast<long>(at + c));
                forest.linear_coeff_.insert(forest.linear_coeff_.end(), coeff.begin() + static_cast<long>(at),
                                            coeff.begin() + static_cast<long>(at + c));
                at += c;
                forest.linear_begin_[leaf_base + static_cast<std::size_t>(l) + 1] =
                    static_cast<std::uint32_t>(forest.linear_feature_.size());
            }
        }
        if (forest.nodes_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 2)) {
            fail(tree.line, "too many nodes");
        }
    }
    forest.build_used_features();
    forest.build_linear_leaves();
    forest.build_fast_nodes();
    forest.build_bit_splits();
    return forest;
}

void Forest::build_used_features() {
    std::vector<char> used(static_cast<std::size_t>(num_features_), 0);
    for (const Node& node : nodes_) {
        if (!(node.feature_flags & kLeaf)) used[node.feature_flags >> 8] = 1;
    }
    // LightGBM's linear leaves read their branch's split features, but the fast paths must not
    // rely on it: a linear feature no split reads is transposed too
    for (std::int32_t feature : linear_feature_) used[static_cast<std::size_t>(feature)] = 1;
    used_features_.clear();
    slot_of_.assign(used.size(), 0);
    for (std::size_t j = 0; j < used.size(); ++j) {
        if (!used[j]) continue;
        slot_of_[j] = static_cast<std::uint32_t>(used_features_.size());
        used_features_.push_back(static_cast<std::uint32_t>(j));
    }
    linear_slot_.clear();
    for (std::int32_t feature : linear_feature_) linear_slot_.push_back(slot_of_[static_cast<std::size_t>(feature)]);
}

void Forest::build_linear_leaves() {
    linear_leaf_.clear();
    if (!has_linear_) return;
    for (std::size_t l = 0; l < leaf_const_.size(); ++l) {
        linear_leaf_.push_back({leaf_const_[l], linear_begin_[l], linear_begin_[l + 1]});
    }
}

void Forest::build_bit_splits() {
    bit_splits_.clear();
    bit_begin_.assign(1, 0);
    narrow_.clear();
    bit_leaf_base_.clear();
    bit_leaf_value_.clear();
    bit_leaf_global_.clear();
    bit_linear_.clear();
    bits_ok_ = true;
    for (std::int32_t root : roots_) {
        // Depth-first, left first: leaves come in left-to-right order, numbered so from 0.
        bit_leaf_base_.push_back(static_cast<std::uint32_t>(bit_leaf_value_.size()));
        int leaves = 0;
        std::vector<std::pair<std::int32_t, int>> stack{{root, 0}};  // (node, 0 enter / 1 left done)
        std::vector<int> left_start;  // per open split: its first leaf number
        std::vector<std::size_t> open;
        while (!stack.empty()) {
            auto [index, phase] = stack.back();
            stack.pop_back();
            const Node& node = nodes_[static_cast<std::size_t>(index)];
            if (node.feature_flags & kLeaf) {
                const std::int32_t leaf = node_leaf_[static_cast<std::size_t>(index)];
                bit_leaf_value_.push_back(leaf_value_[static_cast<std::size_t>(leaf)]);
                bit_leaf_global_.push_back(leaf);
                if (has_linear_) bit_linear_.push_back(linear_leaf_[static_cast<std::size_t>(leaf)]);
                ++leaves;
                continue;
            }
            if (phase == 0) {
                open.push_back(bit_splits_.size());
                left_start.push_back(leaves);
                bit_splits_.push_back({slot_of_[node.feature_flags >> 8], node.threshold, 0, 0});
                stack.push_back({index, 1});
                stack.push_back({node.left, 0});
            } else {
                // the left subtree's leaves are [left_start, leaves): a failed test clears them
                const int lo = left_start.back(), hi = leaves;
                left_start.pop_back();
                std::uint64_t left = 0;
                for (int l = lo; l < hi && l < 64; ++l) left |= std::uint64_t{1} << l;
                const std::uint64_t keep = ~left;
                bit_splits_[open.back()].keep_low = static_cast<std::int32_t>(static_cast<std::uint32_t>(keep));
                bit_splits_[open.back()].keep_high = static_cast<std::int32_t>(static_cast<std::uint32_t>(keep >> 32));
                open.pop_back();
                stack.push_back({node.right, 0});
            }
        }
        if (leaves > 64) bits_ok_ = false;
        narrow_.push_back(leaves <= 32);
        bit_begin_.push_back(static_cast<std::uint32_t>(bit_splits_.size()));
    }
    if (!bits_ok_) {
        bit_splits_.clear();
        bit_begin_.clear();
        bit_leaf_base_.clear();
        bit_leaf_value_.clear();
        bit_leaf_global_.clear();
        bit_linear_.clear();
    }
    build_bit_tests();
}

void Forest::build_bit_tests() {
    bit_tests_.clear();
    test_splits_.clear();
    for (const BitSplit& split : bit_splits_) bit_tests_.push_back({split.slot, split.threshold});
    auto before = [](const BitTest& a, const BitTest& b) {
        return a.slot != b.slot ? a.slot < b.slot : a.threshold < b.threshold;
    };
    auto same = [](const BitTest& a, const BitTest& b) { return a.slot == b.slot && a.threshold == b.threshold; };
    std::sort(bit_tests_.begin(), bit_tests_.end(), before);
    bit_tests_.erase(std::unique(bit_tests_.begin(), bit_tests_.end(), same), bit_tests_.end());
    for (const BitSplit& split : bit_splits_) {
        const BitTest key{split.slot, split.threshold};
        const auto at = std::lower_bound(bit_tests_.begin(), bit_tests_.end(), key, before);
        test_splits_.push_back({static_cast<std::uint32_t>(at - bit_tests_.begin()), split.keep_low, split.keep_high});
    }
}

void Forest::build_fast_nodes() {
    fast_.clear();
    fast_roots_.clear();
    std::vector<std::pair<std::int32_t, std::int32_t>> queue;  // (node, its slot), breadth first
    for (std::int32_t root : roots_) {
        const auto top = static_cast<std::int32_t>(fast_.size());
        fast_roots_.push_back(top);
        fast_.push_back({});
        queue.assign(1, {root, top});
        for (std::size_t q = 0; q < queue.size(); ++q) {
            const auto [index, slot] = queue[q];
            const Node& node = nodes_[static_cast<std::size_t>(index)];
            if (node.feature_flags & kLeaf) {
                fast_[static_cast<std::size_t>(slot)] = {std::numeric_limits<float>::infinity(), 0, slot,
                                                         node_leaf_[static_cast<std::size_t>(index)]};
                continue;
            }
            const auto pair = static_cast<std::int32_t>(fast_.size());
            fast_.resize(fast_.size() + 2);
            fast_[static_cast<std::size_t>(slot)] = {
                node.threshold, static_cast<std::uint32_t>(slot_of_[node.feature_flags >> 8] * kGroup), pair, -1};
            queue.push_back({node.left, pair});
            queue.push_back({node.right, pair + 1});
        }
    }
}

bool Forest::identity_output() const {
    static const char* const identity[] = {"regression", "regression_l1", "huber", "fair", "quantile", "mape", "custom"};
    for (const char* name : identity) {
        if (objective_ == name) return true;
    }
    return objective_.empty();
}

// ---- evaluation ----

inline bool go_left(const Forest::Node& node, float x, const std::uint32_t* cat_ranges,
                    const std::uint32_t* cat_bits) {
    const std::uint32_t flags = node.feature_flags;
    if (flags & Forest::kCategorical) {
        // LightGBM: NaN, negative and (on x86) out-of-int-range values go right
        if (std::isnan(x) || x <= -1.0f || x >= 2147483648.0f) return false;
        const auto value = static_cast<std::uint32_t>(static_cast<std::int32_t>(x));
        const std::uint32_t begin = cat_ranges[2 * node.cat], words = cat_ranges[2 * node.cat + 1];
        const std::uint32_t word = value / 32;
        return word < words && ((cat_bits[begin + word] >> (value % 32)) & 1u);
    }
    if (std::isnan(x)) return flags & Forest::kNanLeft;
    if ((flags & Forest::kZeroMissing) && x == 0.0f) return flags & Forest::kDefaultLeft;
    return x <= node.threshold;
}

namespace {
// x as linear leaves read it: within [low[i], high[i]] when there are bounds (set_linear_bounds).
inline float within_bounds(float x, std::size_t i, const std::vector<float>& low, const std::vector<float>& high) {
    return low.empty() ? x : std::min(std::max(x, low[i]), high[i]);
}
}  // namespace

void Forest::set_linear_bounds(std::vector<float> low, std::vector<float> high) {
    const auto n = static_cast<std::size_t>(num_features_);
    if (low.size() != n || high.size() != n) {
        throw std::invalid_argument("linear bounds: " + std::to_string(low.size()) + " low and " +
                                    std::to_string(high.size()) + " high values for " + std::to_string(n) +
                                    " features");
    }
    for (std::size_t f = 0; f < n; ++f) {
        if (!(low[f] <= high[f])) {
            throw std::invalid_argument("linear bounds: feature " + std::to_string(f) + " has low " +
                                        std::to_string(low[f]) + " > high " + std::to_string(high[f]));
        }
    }
    linear_low_ = std::move(low);
    linear_high_ = std::move(high);
    slot_low_.clear();
    slot_high_.clear();
    for (std::uint32_t feature : used_features_) {
        slot_low_.push_back(linear_low_[feature]);
        slot_high_.push_back(linear_high_[feature]);
    }
}

double Forest::leaf_output(std::int32_t leaf, const float* row) const {
    if (!has_linear_) return leaf_value_[static_cast<std::size_t>(leaf)];
    const std::uint32_t begin = linear_begin_[static_cast<std::size_t>(leaf)];
    const std::uint32_t end = linear_begin_[static_cast<std::size_t>(leaf) + 1];
    double output = leaf_const_[static_cast<std::size_t>(leaf)];
    for (std::uint32_t i = begin; i < end; ++i) {
        const auto feature = static_cast<std::size_t>(linear_feature_[i]);
        const float x = row[feature];
        if (std::isnan(x)) return leaf_value_[static_cast<std::size_t>(leaf)];
        output += linear_coeff_[i] * static_cast<double>(within_bounds(x, feature, linear_low_, linear_high_));
    }
    return output;
}

template <bool General>
void Forest::score_rows(const float* block, std::size_t rows, double* out) const {
    // The general path (NaN in the rows, zero-as-missing or categorical splits).
    // G rows walk each tree in lockstep: G independent load chains for the core to overlap.
    // A group stops when all its rows sit in sinks; at worst after the tree's depth.
    // (G=16 with that early stop beat fixed-depth walks, other group sizes and one row at a
    // time on the CPU collection's boosters; docs/decisions.md.)
    constexpr std::size_t G = 16;
    const std::size_t f = static_cast<std::size_t>(num_features_);
    const Node* nodes = nodes_.data();
    const std::size_t trees = roots_.size();
    for (std::size_t r0 = 0; r0 < rows; r0 += G) {
        const std::size_t g_count = std::min(G, rows - r0);
        const float* row[G];
        for (std::size_t g = 0; g < G; ++g) row[g] = block + (r0 + std::min(g, g_count - 1)) * f;
        double sum[G] = {};
        for (std::size_t t = 0; t < trees; ++t) {
            std::int32_t n[G];
            for (std::size_t g = 0; g < G; ++g) n[g] = roots_[t];
            const int depth = depth_[t];
            for (int d = 0; d < depth; ++d) {
                std::uint32_t active = 0;
                for (std::size_t g = 0; g < G; ++g) {
                    const Node& node = nodes[n[g]];
                    const float x = row[g][node.feature_flags >> 8];
                    active |= ~node.feature_flags & kLeaf;
                    if constexpr (General) {
                        if (node.feature_flags & kLeaf) continue;
                        n[g] = go_left(node, x, cat_ranges_.data(), cat_bits_.data()) ? node.left : node.right;
                    } else {
                        n[g] = x <= node.threshold ? node.left : node.right;
                    }
                }
                if (!active) break;
            }
            // trees in order, as LightGBM adds them
            for (std::size_t g = 0; g < G; ++g) {
                sum[g] += leaf_output(node_leaf_[static_cast<std::size_t>(n[g])], row[g]);
            }
        }
        for (std::size_t g = 0; g < g_count; ++g) out[r0 + g] = sum[g];
    }
}

// A fast path for trees of more than 64 leaves: G rows (feature-major) through every tree; the
// step is branch-free, n[] can live in registers, and the group stops once every row sits in a
// sink. Faster than the general path, with G=16 beating 8 and 32; bit sets (score_group_bits),
// for trees of up to 64 leaves, are faster still (docs/decisions.md).
void Forest::score_group_fast(const float* transposed, double* sum, std::int32_t* leaves) const {
    constexpr std::size_t G = kGroup;
    const FastNode* nodes = fast_.data();
    const std::size_t trees = roots_.size();
    for (std::size_t t = 0; t < trees; ++t) {
        std::int32_t n[G];
        for (std::size_t g = 0; g < G; ++g) n[g] = fast_roots_[t];
        const int depth = depth_[t];
        for (int d = 0; d < depth; ++d) {
            std::int32_t active = 0;
#pragma GCC unroll 16
            for (std::size_t g = 0; g < G; ++g) {
                const FastNode& node = nodes[n[g]];
                active |= node.leaf;
                n[g] = node.base + (transposed[node.offset + g] > node.threshold);
            }
            if (active >= 0) break;
        }
        if (leaves) {  // linear leaves: add_linear_terms adds their outputs
            for (std::size_t g = 0; g < G; ++g) leaves[t * G + g] = nodes[n[g]].leaf;
        } else {
            for (std::size_t g = 0; g < G; ++g) sum[g] += leaf_value_[static_cast<std::size_t>(nodes[n[g]].leaf)];
        }
    }
}

// 16 rows at once: a row's 64-bit leaf set is kept as two 32-bit halves, in vectors of 4 lanes
// each, so the comparison's lanes mask both directly (GCC/Clang vector extensions: baseline, AVX2 or
// AVX-512 code, as platform::simd_level() chooses at run time). 4 lanes, not 16: GCC turns a vector
// comparison wider than the instruction set's registers into one scalar comparison per lane
// (ten times slower with SSE2 or AVX2).
typedef float F32x4 __attribute__((vector_size(16)));
typedef std::int32_t I32x4 __attribute__((vector_size(16)));
static_assert(Forest::kGroup == 16, "score_group_bits handles 16 rows");

// inline: run_at_simd_level can only copy a body into each level's function if no other library can
// replace it at load time (under -fPIC, an exported function could be).
inline void Forest::score_group_bits_body(const float* transposed, double* sum, std::int32_t* leaves) const {
    constexpr std::size_t C = kGroup / 4;  // 4-row slices
    const BitSplit* splits = bit_splits_.data();
    const std::size_t trees = roots_.size();
    for (std::size_t t = 0; t < trees; ++t) {
        I32x4 low[C], high[C];
        for (std::size_t c = 0; c < C; ++c) low[c] = high[c] = ~I32x4{};
        for (std::uint32_t j = bit_begin_[t]; j < bit_begin_[t + 1]; ++j) {
            const float* rows = transposed + splits[j].slot * kGroup;
            for (std::size_t c = 0; c < C; ++c) {
                F32x4 x;
                std::memcpy(&x, rows + 4 * c, sizeof x);
                const I32x4 pass = ~(x > splits[j].threshold);  // all ones where the row goes left
                low[c] &= splits[j].keep_low | pass;
                high[c] &= splits[j].keep_high | pass;
            }
        }
        const double* values = bit_leaf_value_.data() + bit_leaf_base_[t];
        for (std::size_t g = 0; g < kGroup; ++g) {
            const auto lo = static_cast<std::uint32_t>(low[g / 4][g % 4]);
            const int leaf = lo ? __builtin_ctz(lo) : 32 + __builtin_ctz(static_cast<std::uint32_t>(high[g / 4][g % 4]));
            if (leaves) {  // linear leaves: add_linear_terms adds their outputs
                leaves[t * kGroup + g] = bit_leaf_global_[bit_leaf_base_[t] + static_cast<std::uint32_t>(leaf)];
            } else {
                sum[g] += values[leaf];
            }
        }
    }
}

void Forest::score_group_bits(const float* transposed, double* sum, std::int32_t* leaves) const {
    platform::run_at_simd_level([&] { score_group_bits_body(transposed, sum, leaves); });
}

// The linear leaves' outputs, constant plus coefficient x value over the leaf's features, added in
// tree order to a group of kGroup rows: leaves[t * kGroup + g] is row g's leaf in tree t (global
// index). A leaf at a time, as add_linear_terms_avx512 takes 64 rows: the rows a tree sent to one
// leaf share its terms, so each 4-row slice takes them in one vector of doubles and only that leaf's
// rows keep the result. The rows are read in double once, into `widened`. Per lane, the arithmetic
// of leaf_output in its order (the build keeps multiplies and adds unfused), so a row scores the
// same whichever path its block takes.
typedef double F64x4 __attribute__((vector_size(32)));
typedef std::int64_t I64x4 __attribute__((vector_size(32)));

inline void Forest::add_linear_terms_body(const std::int32_t* leaves, const float* transposed, double* widened,
                                          double* sum) const {
    constexpr std::size_t G = kGroup, S = G / 4;  // rows, and 4-row slices
    static_assert(G <= 32, "a group's rows are one 32-bit set");
    // lanes of a 4-row slice picked by four bits of a row set
    static const I64x4 kPick[16] = {
        {0, 0, 0, 0},   {-1, 0, 0, 0},   {0, -1, 0, 0},   {-1, -1, 0, 0},   {0, 0, -1, 0},   {-1, 0, -1, 0},
        {0, -1, -1, 0}, {-1, -1, -1, 0}, {0, 0, 0, -1},   {-1, 0, 0, -1},   {0, -1, 0, -1},  {-1, -1, 0, -1},
        {0, 0, -1, -1}, {-1, 0, -1, -1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};
    const std::size_t slots = used_features_.size();
    for (std::size_t i = 0; i < slots * G; ++i) {
        widened[i] = static_cast<double>(within_bounds(transposed[i], i / G, slot_low_, slot_high_));
    }
    const LinearLeaf* linear = linear_leaf_.data();
    const std::uint32_t* slot = linear_slot_.data();
    const double* coeff = linear_coeff_.data();
    F64x4 total[S];
    std::memcpy(total, sum, sizeof total);
    for (std::size_t t = 0; t < roots_.size(); ++t) {
        const std::int32_t* reached = leaves + t * G;
        std::uint32_t pending = (std::uint32_t{1} << (G - 1) << 1) - 1;  // all G rows
        while (pending) {
            const std::int32_t leaf = reached[__builtin_ctz(pending)];
            std::uint32_t rows = 0;
            for (std::size_t g = 0; g < G; ++g) rows |= std::uint32_t{reached[g] == leaf} << g;
            pending &= ~rows;
            const LinearLeaf& terms = linear[static_cast<std::size_t>(leaf)];
            F64x4 output[S];
            for (auto& o : output) o = F64x4{} + terms.constant;
            for (std::uint32_t i = terms.begin; i < terms.end; ++i) {
                const double* x = widened + slot[i] * G;
                for (std::size_t k = 0; k < S; ++k) {
                    F64x4 v;
                    std::memcpy(&v, x + 4 * k, sizeof v);
                    output[k] = output[k] + coeff[i] * v;
                }
            }
            for (std::size_t k = 0; k < S; ++k) {
                const I64x4 pick = kPick[(rows >> (4 * k)) & 15];  // (a vector cast reinterprets the bits)
                const I64x4 chosen = (pick & (I64x4)(total[k] + output[k])) | (~pick & (I64x4)total[k]);
                total[k] = (F64x4)chosen;
            }
        }
    }
    std::memcpy(sum, total, sizeof total);
}

void Forest::add_linear_terms(const std::int32_t* leaves, const float* transposed, double* widened,
                              double* sum) const {
    platform::run_at_simd_level([&] { add_linear_terms_body(leaves, transposed, widened, sum); });
}

#ifdef ITERCAST_AVX512
// GCC 12 warns inside its own avx512fintrin.h (intrinsics that start from an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

// The bit-set kernel for 64 rows: AVX-512 compares put each split's test for 16 rows in a mask
// register, which clears leaves by a masked AND with no blend; the exit leaf's index comes from
// the lowest set bit (isolated, converted to float: its exponent) and its value from a gather.
// Scores equal score_group_bits' (each row's leaf values added in tree order, in double).
// set &= keep in the lanes of m, in place. GCC 12 copies the set before and after
// _mm512_mask_and_epi32 when its result replaces its source (two moves per AND in this loop).
__attribute__((target("avx512f"), always_inline)) inline void masked_and(__m512i& set, __mmask16 m, __m512i keep) {
#if defined(__GNUC__) && !defined(__clang__)
    asm("vpandd %1, %0, %0%{%2%}" : "+v"(set) : "v"(keep), "Yk"(m));
#else
    set = _mm512_mask_and_epi32(set, m, set, keep);
#endif
}

__attribute__((target("avx512f"))) void score_bits_avx512(const Forest::BitTest* tests, std::size_t test_count,
                                                          const Forest::TestSplit* splits, const std::uint32_t* begin,
                                                          const std::uint8_t* narrow, std::size_t trees,
                                                          const std::uint32_t* leaf_base,
                                                          const double* leaf_value,
                                                          const float* transposed, std::uint16_t* masks, double* sum,
                                                          std::int32_t* leaves) {
    constexpr std::size_t G = Forest::kWideGroup, C = G / 16;  // rows, and vectors of 16 rows
    // each distinct test once: masks[test * C + c], bit g set where row 16 c + g goes right (x > threshold)
    for (std::size_t i = 0; i < test_count; ++i) {
        const float* x = transposed + tests[i].slot * G;
        const __m512 threshold = _mm512_set1_ps(tests[i].threshold);
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) {
            masks[i * C + c] = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 16 * c), threshold, _CMP_GT_OQ);
        }
    }
    __m512d acc[2 * C];
    for (auto& a : acc) a = _mm512_setzero_pd();
    const __m512i ones = _mm512_set1_epi32(-1), zero = _mm512_setzero_si512();
    const __m512i bias = _mm512_set1_epi32(127), upper = _mm512_set1_epi32(32);
    for (std::size_t t = 0; t < trees; ++t) {
        const double* values = leaf_value + leaf_base[t];
        __m512i lo[C], hi[C];
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) lo[c] = hi[c] = ones;
        if (narrow[t]) {
            // <= 32 leaves: every split keeps all of leaves 32-63, the high half never changes
            for (std::uint32_t j = begin[t]; j < begin[t + 1]; ++j) {
                const std::uint16_t* m = masks + splits[j].test * C;
                const __m512i keep_lo = _mm512_set1_epi32(splits[j].keep_low);
#pragma GCC unroll 8
                for (std::size_t c = 0; c < C; ++c) masked_and(lo[c], m[c], keep_lo);
            }
        } else {
            for (std::uint32_t j = begin[t]; j < begin[t + 1]; ++j) {
                const Forest::TestSplit& split = splits[j];
                const std::uint16_t* m = masks + split.test * C;
                const __m512i keep_lo = _mm512_set1_epi32(split.keep_low);
                const __m512i keep_hi = _mm512_set1_epi32(split.keep_high);
#pragma GCC unroll 8
                for (std::size_t c = 0; c < C; ++c) {
                    // rows going right clear the split's left subtree
                    masked_and(lo[c], m[c], keep_lo);
                    masked_and(hi[c], m[c], keep_hi);
                }
            }
        }
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) {
            // the exit leaf is the lowest set bit: isolated, converted to float, read from the exponent
            const __mmask16 in_low = _mm512_test_epi32_mask(lo[c], lo[c]);
            const __m512i v = _mm512_mask_blend_epi32(in_low, hi[c], lo[c]);
            const __m512i lowest = _mm512_and_si512(v, _mm512_sub_epi32(zero, v));  // a power of two
            const __m512i exponent = _mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepu32_ps(lowest)), 23);
            __m512i leaf = _mm512_sub_epi32(exponent, bias);
            leaf = _mm512_mask_add_epi32(leaf, static_cast<__mmask16>(~in_low), leaf, upper);
            if (leaves) {  // linear leaves: each row's leaf in bit_linear_, for add_linear_terms_avx512
                const __m512i at = _mm512_add_epi32(leaf, _mm512_set1_epi32(static_cast<std::int32_t>(leaf_base[t])));
                _mm512_storeu_si512(leaves + t * G + 16 * c, at);
                continue;
            }
            acc[2 * c] = _mm512_add_pd(acc[2 * c], _mm512_i32gather_pd(_mm512_castsi512_si256(leaf), values, 8));
            acc[2 * c + 1] = _mm512_add_pd(acc[2 * c + 1],
                                           _mm512_i32gather_pd(_mm512_extracti64x4_epi64(leaf, 1), values, 8));
        }
    }
    for (std::size_t k = 0; k < 2 * C; ++k) _mm512_storeu_pd(sum + 8 * k, acc[k]);
}

// add_linear_terms for a group of kWideGroup rows, a leaf at a time: the rows a tree sent to one leaf
// share its terms, so every 8-row slice takes them in one vector and only that leaf's rows keep
// the result (fewer branches the core cannot predict than choosing slices; eight independent sums
// hide the add's latency). The rows are read in double once, `widened`: a term is then a multiply
// and an add. Per lane, the scalar arithmetic in its order (the build keeps the two unfused), so a
// row scores the same bits as on the other paths.
// `low` and `high` (per slot, or null): the bounds linear leaves read values within.
__attribute__((target("avx512f"))) void add_linear_terms_avx512(const std::int32_t* leaves, std::size_t trees,
                                                                const float* transposed, std::size_t slots,
                                                                const Forest::LinearLeaf* linear,
                                                                const std::uint32_t* slot, const double* coeff,
                                                                const float* low, const float* high,
                                                                double* widened, double* sum) {
    constexpr std::size_t G = Forest::kWideGroup, C = G / 16, S = G / 8;  // rows, 16-row and 8-row slices
    for (std::size_t s = 0; s < slots; ++s) {
        for (std::size_t k = 0; k < S; ++k) {
            __m256 v = _mm256_loadu_ps(transposed + s * G + 8 * k);
            if (low) v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(low[s])), _mm256_set1_ps(high[s]));
            _mm512_storeu_pd(widened + s * G + 8 * k, _mm512_cvtps_pd(v));
        }
    }
    __m512d total[S];
    for (std::size_t k = 0; k < S; ++k) total[k] = _mm512_loadu_pd(sum + 8 * k);
    for (std::size_t t = 0; t < trees; ++t) {
        const std::int32_t* reached = leaves + t * G;
        __m512i leaf_of[C];
        for (std::size_t c = 0; c < C; ++c) leaf_of[c] = _mm512_loadu_si512(reached + 16 * c);
        std::uint64_t pending = ~std::uint64_t{0};
        while (pending) {
            const std::int32_t leaf = reached[__builtin_ctzll(pending)];
            const __m512i wanted = _mm512_set1_epi32(leaf);
            std::uint64_t rows = 0;
            for (std::size_t c = 0; c < C; ++c) {
                rows |= std::uint64_t{_mm512_cmpeq_epi32_mask(leaf_of[c], wanted)} << (16 * c);
            }
            pending &= ~rows;
            const Forest::LinearLeaf& terms = linear[static_cast<std::size_t>(leaf)];
            __m512d output[S];
            for (auto& o : output) o = _mm512_set1_pd(terms.constant);
            for (std::uint32_t i = terms.begin; i < terms.end; ++i) {
                const double* x = widened + slot[i] * G;
                const __m512d c = _mm512_set1_pd(coeff[i]);
#pragma GCC unroll 8
                for (std::size_t k = 0; k < S; ++k) {
                    output[k] = _mm512_add_pd(output[k], _mm512_mul_pd(c, _mm512_loadu_pd(x + 8 * k)));
                }
            }
#pragma GCC unroll 8
            for (std::size_t k = 0; k < S; ++k) {
                total[k] = _mm512_mask_add_pd(total[k], static_cast<__mmask8>(rows >> (8 * k)), total[k], output[k]);
            }
        }
    }
    for (std::size_t k = 0; k < S; ++k) _mm512_storeu_pd(sum + 8 * k, total[k]);
}

// Forest::transpose for 64 rows of x (row_stride floats apart, `count` of them real, the rest
// repeating the last): each used feature's 16-row slices gathered in one instruction.
__attribute__((target("avx512f"))) bool transpose_avx512(const float* x, std::size_t row_stride, std::size_t count,
                                                         const std::uint32_t* used, std::size_t used_count,
                                                         float* transposed) {
    constexpr std::size_t C = Forest::kWideGroup / 16;
    __m512i offset[C];
    for (std::size_t c = 0; c < C; ++c) {
        alignas(64) std::int32_t lanes[16];
        for (std::size_t g = 0; g < 16; ++g) {
            lanes[g] = static_cast<std::int32_t>(std::min(16 * c + g, count - 1) * row_stride);
        }
        offset[c] = _mm512_load_si512(lanes);
    }
    const __m512 tiny = _mm512_set1_ps(kZeroThreshold);
    __mmask16 nan = 0;
    for (std::size_t s = 0; s < used_count; ++s) {
        const float* column = x + used[s];
#pragma GCC unroll 4
        for (std::size_t c = 0; c < C; ++c) {
            const __m512 v = _mm512_i32gather_ps(offset[c], column, 4);
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            const __mmask16 zero = _mm512_cmp_ps_mask(_mm512_abs_ps(v), tiny, _CMP_LE_OQ);
            _mm512_storeu_ps(transposed + s * Forest::kWideGroup + 16 * c, _mm512_mask_mov_ps(v, zero, _mm512_setzero_ps()));
        }
    }
    return nan != 0;
}

}  // namespace
#pragma GCC diagnostic pop
#endif

namespace {
std::atomic<bool> force_portable{false};

bool use_avx512() {
#ifdef ITERCAST_AVX512
    return platform::simd_level() == platform::SimdLevel::Avx512 && !force_portable.load(std::memory_order_relaxed);
#else
    return false;
#endif
}
}  // namespace

void set_bit_kernel(BitKernel kernel) { force_portable.store(kernel == BitKernel::Portable); }

const char* bit_kernel_name() { return use_avx512() ? "avx512" : "portable"; }

// Rows first .. first + count of x (or of x[select]) into `transposed`, feature-major over the
// features the forest splits on, `group` rows per feature (a short group repeats its last row);
// values LightGBM reads as zero become 0. Returns whether any of those features is NaN.
bool Forest::transpose(const float* x, std::size_t row_stride, const std::int64_t* select, std::size_t first,
                       std::size_t count, std::size_t group, float* transposed) const {
    const std::uint32_t* used = used_features_.data();
    const std::size_t u = used_features_.size();
    bool nan = false;
    for (std::size_t g = 0; g < group; ++g) {
        const std::size_t i = first + std::min(g, count - 1);
        const float* in = x + (select ? static_cast<std::size_t>(select[i]) : i) * row_stride;
        for (std::size_t s = 0; s < u; ++s) {
            const float v = in[used[s]];
            nan |= v != v;
            transposed[s * group + g] = std::fabs(v) <= kZeroThreshold ? 0.0f : v;
        }
    }
    return nan;
}

void Forest::predict_block(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                           const std::int64_t* select) const {
    const std::size_t f = static_cast<std::size_t>(num_features_);
    const bool plain = !has_special_;  // fast paths unless a row holds NaN
    const bool wide = plain && bits_ok_ && use_avx512();
    // rows per block: 32 x 214 floats stay in L1 (general path); the wide kernel takes 64 at once
    const std::size_t B = wide ? kWideGroup : 32;
    const std::size_t group = wide ? kWideGroup : kGroup;
    std::vector<float> block(B * std::max<std::size_t>(f, 1));
    std::vector<float> transposed(group * std::max<std::size_t>(used_features_.size(), 1));
    std::vector<std::uint16_t> masks(wide ? bit_tests_.size() * (kWideGroup / 16) : 0);
    // linear leaves: the kernels say which leaf each row reached, add_linear_terms adds their outputs
    std::vector<std::int32_t> leaves(has_linear_ ? group * roots_.size() : 0);
    std::int32_t* const reached = has_linear_ ? leaves.data() : nullptr;
    std::vector<double> widened(has_linear_ ? transposed.size() : 0);
    for (std::size_t r0 = 0; r0 < rows; r0 += B) {
        const std::size_t n = std::min(B, rows - r0);
        bool any_nan = false;
        if (plain) {
            // Each group of rows is copied feature-major straight from x, read as LightGBM reads it;
            // features no split reads are skipped (a NaN there changes no score).
            for (std::size_t g0 = 0; g0 < n; g0 += group) {
                const std::size_t count = std::min(group, n - g0);
#ifdef ITERCAST_AVX512
                // 32-bit gather offsets: rows of one group, at most 63 row strides apart
                const bool gather = wide && !select && (kWideGroup - 1) * row_stride < (std::size_t{1} << 31);
                const bool nan = gather ? transpose_avx512(x + (r0 + g0) * row_stride, row_stride, count,
                                                           used_features_.data(), used_features_.size(),
                                                           transposed.data())
                                        : transpose(x, row_stride, select, r0 + g0, count, group, transposed.data());
#else
                const bool nan = transpose(x, row_stride, select, r0 + g0, count, group, transposed.data());
#endif
                if (nan) {
                    any_nan = true;  // the whole block takes the general path
                    break;
                }
                double sum[kWideGroup] = {};
#ifdef ITERCAST_AVX512
                if (wide) {
                    score_bits_avx512(bit_tests_.data(), bit_tests_.size(), test_splits_.data(), bit_begin_.data(),
                                      narrow_.data(), roots_.size(), bit_leaf_base_.data(), bit_leaf_value_.data(),
                                      transposed.data(), masks.data(), sum, reached);
                } else
#endif
                if (bits_ok_) {
                    score_group_bits(transposed.data(), sum, reached);
                } else {
                    score_group_fast(transposed.data(), sum, reached);
                }
#ifdef ITERCAST_AVX512
                if (reached && wide) {
                    add_linear_terms_avx512(reached, roots_.size(), transposed.data(), used_features_.size(),
                                            bit_linear_.data(), linear_slot_.data(), linear_coeff_.data(),
                                            linear_bounded() ? slot_low_.data() : nullptr,
                                            linear_bounded() ? slot_high_.data() : nullptr, widened.data(), sum);
                } else
#endif
                if (reached) {
                    add_linear_terms(reached, transposed.data(), widened.data(), sum);
                }
                for (std::size_t g = 0; g < count; ++g) out[r0 + g0 + g] = sum[g];
            }
            if (!any_nan) continue;
        }
        for (std::size_t i = 0; i < n; ++i) {
            const float* in = x + (select ? static_cast<std::size_t>(select[r0 + i]) : r0 + i) * row_stride;
            float* dst = block.data() + i * f;
            for (std::size_t j = 0; j < f; ++j) {
                const float v = in[j];
                any_nan |= v != v;
                dst[j] = std::fabs(v) <= kZeroThreshold ? 0.0f : v;
            }
        }
        if (has_special_ || any_nan) {
            score_rows<true>(block.data(), n, out + r0);
        } else {
            score_rows<false>(block.data(), n, out + r0);
        }
    }
}

void Forest::predict(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                     const std::int64_t* select, int threads) const {
    constexpr std::size_t kRowsPerThread = 2048;
    std::size_t parts = threads > 1 ? std::min<std::size_t>(static_cast<std::size_t>(threads), rows / kRowsPerThread) : 1;
    if (parts <= 1) {
        predict_block(x, rows, row_stride, out, select);
        return;
    }
    std::vector<std::thread> workers;
    const std::size_t chunk = (rows + parts - 1) / parts;
    for (std::size_t p = 1; p < parts; ++p) {
        const std::size_t begin = p * chunk, end = std::min(rows, begin + chunk);
        if (begin >= end) break;
        workers.emplace_back([=] {
            predict_block(select ? x : x + begin * row_stride, end - begin, row_stride, out + begin,
                          select ? select + begin : nullptr);
        });
    }
    predict_block(x, std::min(rows, chunk), row_stride, out, select);
    for (auto& w : workers) w.join();
}

}  // namespace itercast::predict
