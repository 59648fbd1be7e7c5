#pragma once
// Input shapes and dtypes of an operator, parsed from the raw "Input Dims" and
// "Input type" JSON text the scanner interned (each distinct text once).
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace itercast::timeline {

enum class DType : uint8_t { kFloat32, kFloat16, kBFloat16, kFloat64, kInteger, kBool, kOther, kNone };
constexpr int kDTypeCount = 7;  // kNone is not a feature

struct InputShape {
    std::vector<int64_t> dims;  // of the tensor, or of the first tensor of a list
    double numel = 0;           // all elements (summed over a tensor list)
    bool is_tensor = false;
};

struct OpInputs {
    std::vector<InputShape> inputs;
    std::vector<DType> dtypes;  // one per input, kNone for non-tensors
};

// "[[8, 3, 224, 224], [], [[2, 3], [4]]]" -> shapes (tensor lists are summed).
std::vector<InputShape> parse_input_dims(std::string_view text);
// '["float", "Scalar", "c10::BFloat16"]' -> dtypes.
std::vector<DType> parse_input_types(std::string_view text);
// '["", "[2, 2]", "1"]' -> the integers in each entry ({} for tensors and non-numbers).
using ConcreteInputs = std::vector<std::vector<int64_t>>;
ConcreteInputs parse_concrete_inputs(std::string_view text);
int dtype_bytes(DType dtype);

// Parses each distinct raw text once.
class InputCache {
public:
    const std::vector<InputShape>& dims(int32_t id, std::string_view text);
    const std::vector<DType>& types(int32_t id, std::string_view text);
    const ConcreteInputs& concrete(int32_t id, std::string_view text);

private:
    std::unordered_map<int32_t, std::vector<InputShape>> dims_;
    std::unordered_map<int32_t, std::vector<DType>> types_;
    std::unordered_map<int32_t, ConcreteInputs> concrete_;
};

}  // namespace itercast::timeline
