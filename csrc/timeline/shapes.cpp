#include "timeline/shapes.hpp"

#include <string>

namespace itercast::timeline {

namespace {

// A tiny recursive reader for arrays of integers / arrays; anything else is skipped.
struct Node {
    bool is_list = false;
    int64_t value = 0;
    std::vector<Node> items;
};

void skip_space(std::string_view text, size_t& i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
}

Node read_node(std::string_view text, size_t& i, int depth) {
    Node node;
    skip_space(text, i);
    if (i >= text.size()) return node;
    if (text[i] == '[' && depth < 8) {
        node.is_list = true;
        ++i;
        skip_space(text, i);
        while (i < text.size() && text[i] != ']') {
            node.items.push_back(read_node(text, i, depth + 1));
            skip_space(text, i);
            if (i < text.size() && text[i] == ',') ++i;
            skip_space(text, i);
        }
        if (i < text.size()) ++i;
        return node;
    }
    if (text[i] == '"') {  // strings inside shape lists carry no dims
        for (++i; i < text.size() && text[i] != '"'; ++i)
            if (text[i] == '\\') ++i;
        ++i;
        return node;
    }
    const bool negative = text[i] == '-';
    if (negative) ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') node.value = node.value * 10 + (text[i++] - '0');
    while (i < text.size() && text[i] != ',' && text[i] != ']') ++i;  // fractions, literals
    if (negative) node.value = -node.value;
    return node;
}

bool is_dim_list(const Node& node) {
    if (!node.is_list) return false;
    for (const Node& item : node.items)
        if (item.is_list) return false;
    return true;
}

double numel_of(const std::vector<int64_t>& dims) {
    double n = 1;
    for (int64_t d : dims) n *= static_cast<double>(d > 0 ? d : 0);
    return n;
}

InputShape shape_of(const Node& node) {
    InputShape shape;
    if (is_dim_list(node) && !node.items.empty()) {
        shape.is_tensor = true;
        for (const Node& item : node.items) shape.dims.push_back(item.value);
        shape.numel = numel_of(shape.dims);
    } else if (node.is_list && !node.items.empty() && is_dim_list(node.items[0])) {
        shape.is_tensor = true;  // a tensor list: dims of the first, elements of all
        for (const Node& item : node.items[0].items) shape.dims.push_back(item.value);
        for (const Node& tensor : node.items)
            if (is_dim_list(tensor)) {
                std::vector<int64_t> dims;
                for (const Node& d : tensor.items) dims.push_back(d.value);
                shape.numel += numel_of(dims);
            }
    }
    return shape;
}

DType dtype_of(std::string_view name) {
    if (name == "float" || name == "TensorList") return DType::kFloat32;
    if (name == "c10::Half" || name == "half") return DType::kFloat16;
    if (name == "c10::BFloat16" || name == "bfloat16") return DType::kBFloat16;
    if (name == "double") return DType::kFloat64;
    if (name == "long int" || name == "int" || name == "long" || name == "short int" || name == "signed char" ||
        name == "unsigned char" || name == "int64_t")
        return DType::kInteger;
    if (name == "bool") return DType::kBool;
    if (name.empty() || name == "Scalar" || name == "ScalarList" || name == "GenericList" || name == "None" ||
        name == "Device" || name == "Layout" || name == "ScalarType" || name == "MemoryFormat")
        return DType::kNone;
    return DType::kOther;
}

}  // namespace

std::vector<InputShape> parse_input_dims(std::string_view text) {
    size_t i = 0;
    const Node root = read_node(text, i, 0);
    std::vector<InputShape> shapes;
    for (const Node& item : root.items) shapes.push_back(shape_of(item));
    return shapes;
}

namespace {
// Each string entry of the list, unescaped only as far as quotes go (values are short numbers).
std::vector<std::string_view> string_entries(std::string_view text) {
    std::vector<std::string_view> entries;
    size_t i = 0;
    while (i < text.size()) {
        const size_t open = text.find('"', i);
        if (open == std::string_view::npos) break;
        size_t close = open + 1;
        while (close < text.size() && text[close] != '"') close += text[close] == '\\' ? 2 : 1;
        if (close >= text.size()) break;
        entries.push_back(text.substr(open + 1, close - open - 1));
        i = close + 1;
    }
    return entries;
}

}  // namespace

ConcreteInputs parse_concrete_inputs(std::string_view text) {
    ConcreteInputs out;
    for (std::string_view entry : string_entries(text)) {
        std::vector<int64_t> numbers;
        size_t i = 0;
        while (i < entry.size()) {
            if (entry[i] >= '0' && entry[i] <= '9') {
                int64_t value = 0;
                while (i < entry.size() && entry[i] >= '0' && entry[i] <= '9') value = value * 10 + (entry[i++] - '0');
                numbers.push_back(value);
            } else {
                ++i;
            }
        }
        out.push_back(std::move(numbers));
    }
    return out;
}

std::vector<DType> parse_input_types(std::string_view text) {
    std::vector<DType> types;
    for (std::string_view entry : string_entries(text)) types.push_back(dtype_of(entry));
    return types;
}

int dtype_bytes(DType dtype) {
    switch (dtype) {
        case DType::kFloat16:
        case DType::kBFloat16: return 2;
        case DType::kFloat64:
        case DType::kInteger: return 8;
        case DType::kBool: return 1;
        default: return 4;
    }
}

const std::vector<InputShape>& InputCache::dims(int32_t id, std::string_view text) {
    auto found = dims_.find(id);
    if (found != dims_.end()) return found->second;
    return dims_.emplace(id, parse_input_dims(text)).first->second;
}

const ConcreteInputs& InputCache::concrete(int32_t id, std::string_view text) {
    auto found = concrete_.find(id);
    if (found != concrete_.end()) return found->second;
    return concrete_.emplace(id, parse_concrete_inputs(text)).first->second;
}

const std::vector<DType>& InputCache::types(int32_t id, std::string_view text) {
    auto found = types_.find(id);
    if (found != types_.end()) return found->second;
    return types_.emplace(id, parse_input_types(text)).first->second;
}

}  // namespace itercast::timeline
