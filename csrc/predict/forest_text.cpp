// The model-text parser: LightGBM's model_to_string() format into a Forest's parsed trees.
#include "predict/forest.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace itercast::predict {
namespace {

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
            if (parse_number<long>(id, line.number, "Tree") != static_cast<long>(forest.tree_.roots.size())) {
                fail(line.number, "expected Tree=" + std::to_string(forest.tree_.roots.size()) + ", found '" +
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
                                                           std::to_string(forest.tree_.roots.size()) +
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
        const std::size_t leaf_base = forest.tree_.leaf_value.size();
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
            const auto index = static_cast<std::int32_t>(forest.tree_.nodes.size());
            if (p.slot < 0) {
                root = index;
            } else {
                TreeNode& parent = forest.tree_.nodes[static_cast<std::size_t>(p.slot >> 1)];
                (p.slot & 1 ? parent.right : parent.left) = index;
            }
            TreeNode node{};
            if (p.child < 0) {
                const int leaf = ~p.child;
                if (leaf >= leaves || seen_leaf[static_cast<std::size_t>(leaf)]) {
                    fail(tree.left_child.line, "Tree=" + std::to_string(forest.tree_.roots.size()) +
                                                   ": child ~" + std::to_string(leaf) +
                                                   (leaf >= leaves ? " is not a leaf of it" : " is reached twice"));
                }
                seen_leaf[static_cast<std::size_t>(leaf)] = 1;
                node.threshold = 0.0f;
                node.feature_flags = kLeaf;
                node.left = node.right = index;
                forest.tree_.nodes.push_back(node);
                forest.tree_.node_leaf.push_back(static_cast<std::int32_t>(leaf_base + static_cast<std::size_t>(leaf)));
                max_depth = std::max(max_depth, p.depth);
                continue;
            }
            const auto k = static_cast<std::size_t>(p.child);
            if (k >= inner || seen_inner[k]) {
                fail(tree.left_child.line, "Tree=" + std::to_string(forest.tree_.roots.size()) + ": child " +
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
                node.cat = static_cast<std::uint32_t>(forest.tree_.cat_ranges.size() / 2);
                forest.tree_.cat_ranges.push_back(
                    static_cast<std::uint32_t>(forest.tree_.cat_bits.size() + static_cast<std::size_t>(cat_boundaries[cat])));
                forest.tree_.cat_ranges.push_back(static_cast<std::uint32_t>(cat_boundaries[cat + 1] - cat_boundaries[cat]));
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
            forest.tree_.nodes.push_back(node);
            forest.tree_.node_leaf.push_back(-1);
            const std::int64_t me = static_cast<std::int64_t>(index) * 2;
            // right pushed first so that the left subtree follows its parent
            stack.push_back({right[k], me + 1, p.depth + 1});
            stack.push_back({left[k], me, p.depth + 1});
        }
        if (std::find(seen_inner.begin(), seen_inner.end(), 0) != seen_inner.end() ||
            std::find(seen_leaf.begin(), seen_leaf.end(), 0) != seen_leaf.end()) {
            fail(tree.left_child.line, "Tree=" + std::to_string(forest.tree_.roots.size()) +
                                           ": some nodes or leaves are not reachable from the root");
        }
        forest.tree_.roots.push_back(root);
        forest.tree_.depth.push_back(max_depth);
        if (num_cat > 0) forest.tree_.cat_bits.insert(forest.tree_.cat_bits.end(), cat_threshold.begin(), cat_threshold.end());
        forest.tree_.leaf_value.insert(forest.tree_.leaf_value.end(), leaf_value.begin(), leaf_value.end());
        for (int l = 0; l < leaves; ++l) {
            forest.linear_.constant.push_back(linear ? leaf_const[static_cast<std::size_t>(l)]
                                                : leaf_value[static_cast<std::size_t>(l)]);
            if (forest.linear_.begin.empty()) forest.linear_.begin.push_back(0);
            forest.linear_.begin.push_back(forest.linear_.begin.back());
        }
        if (linear) {
            std::size_t at = 0;
            for (int l = 0; l < leaves; ++l) {
                const auto c = static_cast<std::size_t>(counts[static_cast<std::size_t>(l)]);
                forest.linear_.feature.insert(forest.linear_.feature.end(), features.begin() + static_cast<long>(at),
                                              features.begin() + static_cast<long>(at + c));
                forest.linear_.coeff.insert(forest.linear_.coeff.end(), coeff.begin() + static_cast<long>(at),
                                            coeff.begin() + static_cast<long>(at + c));
                at += c;
                forest.linear_.begin[leaf_base + static_cast<std::size_t>(l) + 1] =
                    static_cast<std::uint32_t>(forest.linear_.feature.size());
            }
        }
        if (forest.tree_.nodes.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 2)) {
            fail(tree.line, "too many nodes");
        }
    }
    forest.build_layouts();
    return forest;
}

}  // namespace itercast::predict
