#include "timeline/op_features.hpp"

#include "timeline/cost_model.hpp"
#include "timeline/name_match.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace itercast::timeline {

namespace {

constexpr int kHashBuckets = 32;
constexpr int kShapeTensors = 3;
constexpr int kShapeDims = 4;
constexpr std::string_view kAutogradPrefix = "autograd::engine::evaluate_function: ";

// Common ops (canonical names) with a column of their own. Append only:
// reordering changes the feature schema (bump kFeatureSchemaVersion in timeline/feature_schema.hpp).
const std::vector<std::string_view>& vocabulary() {
    static const std::vector<std::string_view> names = {
        "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
        "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
        "aten::cudnn_convolution", "aten::mkldnn_convolution", "aten::batch_norm", "aten::layer_norm",
        "aten::group_norm", "aten::native_layer_norm", "aten::native_batch_norm", "aten::relu", "aten::relu_",
        "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh", "aten::softmax", "aten::_softmax",
        "aten::log_softmax", "aten::dropout", "aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::div",
        "aten::sub", "aten::sum", "aten::mean", "aten::embedding", "aten::max_pool2d", "aten::avg_pool2d",
        "aten::adaptive_avg_pool2d", "aten::cat", "aten::copy_", "aten::to", "aten::view", "aten::reshape",
        "aten::flatten", "aten::transpose", "aten::t", "aten::permute", "aten::contiguous", "aten::zero_",
        "aten::zeros", "aten::empty", "aten::cross_entropy_loss", "aten::nll_loss", "aten::mse_loss",
        "aten::scaled_dot_product_attention", "aten::lstm", "aten::gru", "aten::rnn_tanh",
        "aten::_foreach_add_", "aten::_foreach_mul_", "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_",
        "aten::_foreach_sqrt", "aten::_foreach_lerp_", "aten::addcmul_", "aten::addcdiv_", "aten::sqrt",
        "aten::lerp_", "torch::autograd::AccumulateGrad", "AddmmBackward", "MmBackward", "BmmBackward",
        "ConvolutionBackward", "CudnnConvolutionBackward", "NativeBatchNormBackward", "CudnnBatchNormBackward",
        "NativeLayerNormBackward", "ReluBackward", "GeluBackward", "SiluBackward", "SoftmaxBackward",
        "LogSoftmaxBackward", "NllLossBackward", "AddBackward", "MulBackward", "ViewBackward", "TBackward",
        "EmbeddingBackward", "MaxPool2DWithIndicesBackward", "MeanBackward",
        "ScaledDotProductEfficientAttentionBackward", "ScaledDotProductFlashAttentionBackward",
        "UnsafeViewBackward", "ReshapeAliasBackward", "CudnnRnnBackward", "aten::_log_softmax",
        "aten::native_dropout", "aten::embedding_bag",
    };
    return names;
}

const char* const kClassNames[] = {"matmul", "conv", "attention", "norm", "activation", "softmax",
                                   "elementwise", "reduction", "embedding", "pool", "rnn", "loss",
                                   "optimizer", "memory", "view", "other"};
const char* const kPhaseNames[] = {"forward", "backward", "optimizer"};
const char* const kDTypeNames[] = {"float32", "float16", "bfloat16", "float64", "integer", "bool", "other"};

uint32_t fnv1a(std::string_view text) {
    uint32_t h = 2166136261u;
    for (unsigned char c : text) h = (h ^ c) * 16777619u;
    return h;
}

float log1p_feature(double value) { return static_cast<float>(std::log1p(std::max(value, 0.0))); }

}  // namespace

std::string canonical_op_name(std::string_view name) {
    if (name.substr(0, kAutogradPrefix.size()) == kAutogradPrefix) name.remove_prefix(kAutogradPrefix.size());
    std::string out(name);
    const size_t backward = out.rfind("Backward");
    if (backward != std::string::npos) {
        size_t end = backward + std::strlen("Backward");
        size_t digits = end;
        while (digits < out.size() && std::isdigit(static_cast<unsigned char>(out[digits]))) ++digits;
        if (digits == out.size()) out.resize(end);
    }
    return out;
}

OpClass classify_op(std::string_view canonical_name) {
    const std::string name = lower(canonical_name);
    const std::string base = base_name(name);
    if (has_any(name, {"attention", "sdpa", "flash"})) return OpClass::kAttention;
    if (has(name, "conv")) return OpClass::kConv;
    if (is_recurrent_cell(base)) return OpClass::kMatmul;
    if (has_any(name, {"lstm", "gru", "rnn"})) return OpClass::kRnn;
    if (has_any(name, {"_foreach", "accumulategrad", "optimizer"})) return OpClass::kOptimizer;
    if (has(name, "embedding")) return OpClass::kEmbedding;
    if (has_any(name, {"softmax"})) return OpClass::kSoftmax;
    if (has(name, "loss")) return OpClass::kLoss;
    if (has(name, "norm")) return OpClass::kNorm;
    if (has(name, "pool")) return OpClass::kPool;
    if (base == "mm" || base == "addmm" || base == "bmm" || base == "baddbmm" || base == "matmul" ||
        base == "linear" || has_any(name, {"mmbackward", "addmmbackward", "bmmbackward", "linearbackward"}))
        return OpClass::kMatmul;
    if (has_any(name, {"relu", "gelu", "silu", "sigmoid", "tanh", "hardswish", "elu", "dropout", "clamp",
                       "mish", "hardtanh", "leaky"}))
        return OpClass::kActivation;
    if (has_any(base, {"sum", "mean", "max", "min", "argmax", "std", "var", "amax", "prod", "all", "any"}))
        return OpClass::kReduction;
    if (has_any(base, {"view", "reshape", "transpose", "permute", "flatten", "expand", "squeeze", "slice",
                       "select", "as_strided", "split", "chunk", "narrow", "unbind", "alias", "detach"}) ||
        base == "t" || base == "tbackward" || has(name, "viewbackward"))
        return OpClass::kView;
    if (has_any(base, {"copy", "cat", "stack", "zero", "empty", "fill", "ones", "clone", "contiguous", "index",
                       "gather", "scatter", "pad", "repeat", "arange", "full", "resize"}) ||
        base == "to" || base == "_to_copy")
        return OpClass::kMemory;
    if (has_any(base, {"add", "mul", "div", "sub", "pow", "sqrt", "exp", "log", "neg", "rsqrt", "addcmul",
                       "addcdiv", "lerp", "where", "abs", "sin", "cos", "reciprocal", "masked", "eq", "ne",
                       "lt", "gt", "le", "ge", "floor", "round", "sign"}))
        return OpClass::kElementwise;
    return OpClass::kOther;
}

OpIdentity identify_op(std::string_view raw_name) {
    OpIdentity identity;
    identity.canonical_name = canonical_op_name(raw_name);
    identity.base = base_name(lower(identity.canonical_name));
    identity.op_class = classify_op(identity.canonical_name);
    const auto& vocab = vocabulary();
    const auto known = std::find(vocab.begin(), vocab.end(), identity.canonical_name);
    identity.type_column = known != vocab.end()
                               ? static_cast<int32_t>(known - vocab.begin())
                               : static_cast<int32_t>(vocab.size() + fnv1a(identity.canonical_name) % kHashBuckets);
    identity.backward = raw_name.substr(0, kAutogradPrefix.size()) == kAutogradPrefix ||
                        identity.canonical_name.find("Backward") != std::string::npos ||
                        identity.canonical_name.find("AccumulateGrad") != std::string::npos;
    return identity;
}

const std::vector<FeatureColumn>& feature_columns() {
    static const std::vector<FeatureColumn> columns = [] {
        std::vector<FeatureColumn> out;
        for (std::string_view name : vocabulary())
            out.push_back({"op=" + std::string(name), "1 if the op's canonical name is this common op"});
        for (int b = 0; b < kHashBuckets; ++b)
            out.push_back({"op_hash=" + std::to_string(b), "1 if an op outside the vocabulary hashes here"});
        for (int c = 0; c < static_cast<int>(OpClass::kCount); ++c)
            out.push_back({std::string("class=") + kClassNames[c], "1 if the op belongs to this class"});
        for (int p = 0; p < 3; ++p)
            out.push_back({std::string("phase=") + kPhaseNames[p], "1 if the op runs in this phase"});
        for (int d = 0; d < kDTypeCount; ++d)
            out.push_back({std::string("dtype=") + kDTypeNames[d], "1 if the first tensor input has this dtype"});
        out.push_back({"log_inputs", "log(1 + number of inputs)"});
        out.push_back({"log_tensor_inputs", "log(1 + number of tensor inputs)"});
        for (int t = 0; t < kShapeTensors; ++t) {
            for (int d = 0; d < kShapeDims; ++d)
                out.push_back({"in" + std::to_string(t) + "_dim" + std::to_string(d),
                               "log(1 + dim) of tensor input " + std::to_string(t) +
                                   " (right-aligned; leading dims folded into dim0; 0 if absent)"});
            out.push_back({"in" + std::to_string(t) + "_numel",
                           "log(1 + elements) of tensor input " + std::to_string(t)});
        }
        out.push_back({"log_flops", "log(1 + estimated FLOPs), own formula or summed over nested ops"});
        out.push_back({"log_bytes", "log(1 + bytes of tensor inputs), own or summed over nested ops"});
        out.push_back({"log_intensity", "log(1 + FLOPs / bytes)"});
        out.push_back({"log_nested_ops", "log(1 + number of framework ops nested inside)"});
        out.push_back({"log_output_bytes", "log(1 + bytes of the tensors it creates), own or summed over nested ops"});
        return out;
    }();
    return columns;
}

size_t feature_count() { return feature_columns().size(); }

void write_features(const OpStructure& op, float* out) {
    std::fill(out, out + feature_count(), 0.0f);
    float* at = out;
    at[op.identity->type_column] = 1;
    at += vocabulary().size() + kHashBuckets;
    at[static_cast<int>(op.identity->op_class)] = 1;
    at += static_cast<int>(OpClass::kCount);
    at[static_cast<int>(op.phase)] = 1;
    at += 3;
    const std::vector<InputShape> no_inputs;
    const auto& inputs = op.inputs ? *op.inputs : no_inputs;
    if (op.dtypes) {
        for (DType dtype : *op.dtypes)
            if (dtype != DType::kNone) {
                at[static_cast<int>(dtype)] = 1;
                break;
            }
    }
    at += kDTypeCount;
    int tensors = 0;
    for (const auto& shape : inputs) tensors += shape.is_tensor ? 1 : 0;
    *at++ = log1p_feature(static_cast<double>(inputs.size()));
    *at++ = log1p_feature(tensors);
    int written = 0;
    for (const auto& shape : inputs) {
        if (!shape.is_tensor || written == kShapeTensors) continue;
        const auto& dims = shape.dims;
        const size_t rank = dims.size();
        for (int d = 0; d < kShapeDims; ++d) {
            // right-align: dim kShapeDims-1 is the last dim; dim0 folds all leading dims
            const long index = static_cast<long>(rank) - kShapeDims + d;
            double value = 0;
            if (d == 0 && index >= 0) value = product(dims, 0, static_cast<size_t>(index) + 1);
            else if (index >= 0) value = static_cast<double>(dims[static_cast<size_t>(index)]);
            at[d] = log1p_feature(value);
        }
        at[kShapeDims] = log1p_feature(shape.numel);
        at += kShapeDims + 1;
        ++written;
    }
    at += (kShapeTensors - written) * (kShapeDims + 1);
    *at++ = log1p_feature(op.flops);
    *at++ = log1p_feature(op.bytes);
    *at++ = log1p_feature(op.bytes > 0 ? op.flops / op.bytes : 0);
    *at++ = log1p_feature(op.nested_ops);
    *at++ = log1p_feature(op.output_bytes);
}

}  // namespace itercast::timeline
