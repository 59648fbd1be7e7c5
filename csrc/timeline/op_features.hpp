#pragma once
// Per-operator feature vectors from structure alone (never from measured
// times): op type, phase, dtype, input shapes, estimated FLOPs and bytes.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "timeline/shapes.hpp"

namespace itercast::timeline {

enum class Phase : uint8_t { kForward = 0, kBackward = 1, kOptimizer = 2 };

enum class OpClass : uint8_t {
    kMatmul, kConv, kAttention, kNorm, kActivation, kSoftmax, kElementwise, kReduction,
    kEmbedding, kPool, kRnn, kLoss, kOptimizer, kMemory, kView, kOther, kCount
};

// The name used for op identity: the autograd wrapper prefix and the
// version suffix of backward nodes removed ("...: AddmmBackward0" -> "AddmmBackward").
std::string canonical_op_name(std::string_view name);
OpClass classify_op(std::string_view canonical_name);

// Everything derived from an op's name alone (computed once per distinct name).
struct OpIdentity {
    std::string canonical_name;
    std::string base;  // lower-case canonical name without its namespace ("aten::_softmax" -> "_softmax")
    OpClass op_class = OpClass::kOther;
    int32_t type_column = 0;  // its vocabulary column, or its hash bucket's
    bool backward = false;    // an autograd node by its name
};
OpIdentity identify_op(std::string_view raw_name);

// What the feature vector is built from.
struct OpStructure {
    const OpIdentity* identity = nullptr;
    Phase phase = Phase::kForward;
    const std::vector<InputShape>* inputs = nullptr;  // may be null
    const std::vector<DType>* dtypes = nullptr;       // may be null
    double flops = 0;
    double bytes = 0;
    int32_t nested_ops = 0;
    double output_bytes = 0;
};

struct FeatureColumn {
    std::string name;
    std::string meaning;
};

// The fixed feature layout: one entry per column, in order.
const std::vector<FeatureColumn>& feature_columns();
size_t feature_count();
// Writes feature_count() floats.
void write_features(const OpStructure& op, float* out);

}  // namespace itercast::timeline
