#include "timeline/op_features.hpp"

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

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

bool has_any(const std::string& text, std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const char* part) { return has(text, part); });
}

// The last component of "aten::foo" / "foo", lowercased, for exact-word tests.
std::string base_name(const std::string& lowered) {
    const size_t colon = lowered.rfind("::");
    return colon == std::string::npos ? lowered : lowered.substr(colon + 2);
}

uint32_t fnv1a(std::string_view text) {
    uint32_t h = 2166136261u;
    for (unsigned char c : text) h = (h ^ c) * 16777619u;
    return h;
}

double tensor_numel(const std::vector<InputShape>& inputs, size_t index) {
    return index < inputs.size() ? inputs[index].numel : 0;
}

const std::vector<int64_t>* dims_at(const std::vector<InputShape>& inputs, size_t index) {
    return index < inputs.size() && inputs[index].is_tensor ? &inputs[index].dims : nullptr;
}

double product(const std::vector<int64_t>& dims, size_t from, size_t to) {
    double n = 1;
    for (size_t i = from; i < to && i < dims.size(); ++i) n *= static_cast<double>(std::max<int64_t>(dims[i], 0));
    return n;
}

// First index of a tensor input with at least `rank` dims, starting at `from`.
int tensor_with_rank(const std::vector<InputShape>& inputs, size_t from, size_t rank) {
    for (size_t i = from; i < inputs.size(); ++i)
        if (inputs[i].is_tensor && inputs[i].dims.size() >= rank) return static_cast<int>(i);
    return -1;
}

// A matrix product as rows (leading dims folded) x inner x columns; false when the shapes do not say.
struct MatmulDims {
    double rows = 0, inner = 0, columns = 0;
};

// One time step of a recurrent cell called from Python (nn.LSTMCell, nn.GRUCell, nn.RNNCell): its
// gates are one product of [input, hidden] with the stacked weights plus pointwise work, closer to
// an addmm than to a fused whole-sequence layer, which runs T such steps per call.
bool is_recurrent_cell(const std::string& base) {
    return base == "lstm_cell" || base == "gru_cell" || base == "rnn_tanh_cell" || base == "rnn_relu_cell";
}

bool matmul_dims(const std::string& base, const std::vector<InputShape>& in, MatmulDims& out) {
    if (is_recurrent_cell(base)) {  // input [B, F], hidden state(s), w_ih [G, F], w_hh [G, H], biases
        const auto* x = dims_at(in, 0);
        const auto* w_ih = dims_at(in, 2);
        const auto* w_hh = dims_at(in, 3);
        if (!x || !w_ih || !w_hh || x->size() != 2 || w_ih->size() != 2 || w_hh->size() != 2) return false;
        out = {static_cast<double>((*x)[0]), static_cast<double>((*w_ih)[1] + (*w_hh)[1]),
               static_cast<double>((*w_ih)[0])};
        return true;
    }
    if (base == "linear") {  // input [..., K], weight [N, K]
        const auto* x = dims_at(in, 0);
        const auto* w = dims_at(in, 1);
        if (!x || !w || x->empty() || w->size() != 2) return false;
        out = {product(*x, 0, x->size() - 1), static_cast<double>(x->back()), static_cast<double>((*w)[0])};
        return true;
    }
    // mm/addmm/bmm/baddbmm/matmul: the last two tensors with rank >= 2 are the operands.
    const int a = tensor_with_rank(in, base == "addmm" || base == "baddbmm" ? 1 : 0, 2);
    const int b = a < 0 ? -1 : tensor_with_rank(in, static_cast<size_t>(a) + 1, 1);
    if (a < 0 || b < 0) return false;
    const auto& da = in[static_cast<size_t>(a)].dims;
    const auto& db = in[static_cast<size_t>(b)].dims;
    out = {product(da, 0, da.size() - 1), static_cast<double>(da.back()),
           db.size() >= 2 ? static_cast<double>(db.back()) : 1};
    return true;
}

double matmul_flops(const std::string& base, const std::vector<InputShape>& in) {
    MatmulDims d;
    return matmul_dims(base, in, d) ? 2 * d.rows * d.inner * d.columns : -1;
}

// Positions of (stride, padding, dilation) among an op's arguments, by op.
bool conv_argument_positions(const std::string& base, size_t& stride, size_t& padding, size_t& dilation) {
    if (base == "conv1d" || base == "conv2d" || base == "conv3d" || base == "convolution" || base == "_convolution") {
        stride = 3, padding = 4, dilation = 5;
        return true;
    }
    if (base == "mkldnn_convolution") {
        stride = 4, padding = 3, dilation = 5;
        return true;
    }
    if (base == "cudnn_convolution") {
        stride = 3, padding = 2, dilation = 4;
        return true;
    }
    return false;
}

int64_t per_dim(const ConcreteInputs& concrete, size_t position, size_t dim, int64_t fallback) {
    if (position >= concrete.size() || concrete[position].empty()) return fallback;
    const auto& values = concrete[position];
    return values[std::min(dim, values.size() - 1)];
}

// Output spatial elements of a forward convolution (stride 1 and "same" size without arguments).
double conv_output_spatial(const std::string& base, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                           const ConcreteInputs* concrete) {
    size_t stride_at = 0, padding_at = 0, dilation_at = 0;
    const bool known = concrete && conv_argument_positions(base, stride_at, padding_at, dilation_at);
    double spatial = 1;
    for (size_t i = 2; i < x.size(); ++i) {
        int64_t out = x[i];
        if (known) {
            const int64_t s = std::max<int64_t>(1, per_dim(*concrete, stride_at, i - 2, 1));
            const int64_t p = per_dim(*concrete, padding_at, i - 2, 0);
            const int64_t d = std::max<int64_t>(1, per_dim(*concrete, dilation_at, i - 2, 1));
            out = (x[i] + 2 * p - d * (w[i] - 1) - 1) / s + 1;
        }
        spatial *= static_cast<double>(std::max<int64_t>(out, 1));
    }
    return spatial;
}

// Where a convolution backward finds its tensors. convolution_backward takes (grad_output, input,
// weight, ...), as the slow CPU kernels do; the cuDNN, MIOpen and oneDNN ones of older releases
// (self, grad_output, weight, ...). Their grad_output has the input's rank, so read as a forward
// convolution it passed for a weight: a 2021 ResNet-50 stem's backward came to 82 TFLOP.
struct ConvBackwardOperands {
    size_t grad_output = 0, input = 1, weight = 2;
};

bool conv_backward_operands(const std::string& base, ConvBackwardOperands& at) {
    if (base == "convolution_backward" || base == "slow_conv2d_backward" || base == "_slow_conv2d_backward" ||
        base == "thnn_conv2d_backward") {
        at = {0, 1, 2};
        return true;
    }
    if (base == "cudnn_convolution_backward" || base == "miopen_convolution_backward" ||
        base == "miopen_depthwise_convolution_backward" || base == "mkldnn_convolution_backward") {
        at = {1, 0, 2};
        return true;
    }
    return false;
}

// 2 x batch x weight elements x output positions; backward computes grad input and grad weight.
// Other backward pieces (cudnn_convolution_backward_input/_weight take sizes as int lists) have no
// formula: an op nesting them is costed by its own or by theirs.
double conv_flops(const std::string& base, const std::vector<InputShape>& in, const ConcreteInputs* concrete) {
    ConvBackwardOperands at;
    if (conv_backward_operands(base, at)) {
        const auto* grad = dims_at(in, at.grad_output);
        const auto* w = dims_at(in, at.weight);
        if (!grad || !w || grad->size() < 3) return -1;
        return 2 * 2 * static_cast<double>((*grad)[0]) * product(*w, 0, w->size()) * product(*grad, 2, grad->size());
    }
    if (has(base, "backward")) return -1;
    const auto* x = dims_at(in, 0);
    const auto* w = dims_at(in, 1);
    if (!x || !w || x->size() < 3 || w->size() != x->size()) return -1;
    return 2 * static_cast<double>((*x)[0]) * product(*w, 0, w->size()) * conv_output_spatial(base, *x, *w, concrete);
}

// Recurrent layers: 2 x tokens x the weights each token goes through, twice
// that for a backward (gradients of the input and of the weights). The
// weights: a whole module's parameter list (aten::lstm, gru, rnn_tanh:
// input, hx, params, ...), one layer's two matrices (aten::mkldnn_rnn_layer
// and its _backward: input, w_ih, w_hh, ...) or cuDNN's weight list
// (aten::_cudnn_rnn and its _backward: input, weights, ...). An autograd node
// that records only the output gradient (MkldnnRnnLayerBackward0,
// CudnnRnnBackward0) has no estimate: the layer backward nested in it, which
// knows the input's width, stands for it.
double rnn_flops(std::string_view canonical_name, const std::vector<InputShape>& in) {
    const auto* x = dims_at(in, 0);
    if (!x || x->size() < 2 || x->back() <= 0) return -1;
    const double tokens = product(*x, 0, x->size() - 1);
    const std::string name = lower(canonical_name);
    const bool backward = has(name, "backward");
    double weights = 0;
    if (has(name, "mkldnn_rnn_layer")) {
        if (in.size() >= 3) weights = in[1].numel + in[2].numel;
    } else if (has(name, "cudnn_rnn")) {
        if (in.size() >= 2) weights = in[1].numel;
    } else if (!backward && in.size() >= 3) {
        weights = in[2].numel;
    }
    if (weights <= 0) return -1;
    return (backward ? 4 : 2) * tokens * weights;
}

double attention_flops(const std::vector<InputShape>& in) {
    const auto* q = dims_at(in, 0);
    const auto* k = dims_at(in, 1);
    if (!q || !k || q->size() < 2 || k->size() < 2) return -1;
    const double source_len = static_cast<double>((*k)[k->size() - 2]);
    return 4 * product(*q, 0, q->size()) * source_len;
}

double input_bytes(const std::vector<InputShape>& in, const std::vector<DType>& dtypes) {
    double bytes = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const DType dtype = i < dtypes.size() ? dtypes[i] : DType::kFloat32;
        bytes += in[i].numel * dtype_bytes(dtype);
    }
    return bytes;
}

double largest_numel(const std::vector<InputShape>& in) {
    double n = 0;
    for (const auto& shape : in) n = std::max(n, shape.numel);
    return n;
}

double total_numel(const std::vector<InputShape>& in) {
    double n = 0;
    for (const auto& shape : in) n += shape.numel;
    return n;
}

// aten::dropout (and its feature/alpha kinds) returns its input untouched when p is 0 (the fused kernel
// needs p > 0): Hugging Face models keep Dropout(0.0) layers that cost nothing.
bool is_identity_dropout(const std::string& base, const ConcreteInputs* concrete) {
    if (base != "dropout" && base != "feature_dropout" && base != "alpha_dropout" && base != "feature_alpha_dropout")
        return false;
    if (!concrete || concrete->size() < 2 || (*concrete)[1].empty()) return false;  // p unknown
    const auto& p = (*concrete)[1];  // the digits of p's text: "0." -> {0}, "0.1" -> {0, 1}
    return std::all_of(p.begin(), p.end(), [](int64_t digits) { return digits == 0; });
}

// The dispatcher (aten::scaled_dot_product_attention) and the math path it falls back to have no
// estimate: what is nested in them stands for them. On the CPU a flash kernel never writes the
// attention matrix, while the math path (taken with dropout) runs bmm, softmax and dropout over it:
// the same FLOPs, other bytes, and about 4x the time at small sizes.
bool is_attention_composite(const std::string& base) {
    return base == "scaled_dot_product_attention" || base == "_scaled_dot_product_attention_math";
}

// Bytes per element of a c10::ScalarType code as a trace's Concrete Inputs print it (float when absent).
double scalar_type_bytes(const ConcreteInputs& concrete, size_t position) {
    if (position >= concrete.size() || concrete[position].size() != 1) return 4;
    switch (concrete[position][0]) {
        case 0: case 1: case 11: return 1;  // uint8, int8, bool
        case 2: case 5: case 15: return 2;  // int16, half, bfloat16
        case 4: case 7: return 8;           // int64, double
        default: return 4;
    }
}

// Elements of a size list argument ("[20000, 32]"); -1 when absent.
double size_argument(const ConcreteInputs* concrete, size_t position) {
    if (!concrete || position >= concrete->size() || (*concrete)[position].empty()) return -1;
    double n = 1;
    for (int64_t d : (*concrete)[position]) n *= static_cast<double>(d);
    return n;
}

// An op that writes into an existing tensor ("add_", "_foreach_mul_", "copy_"), not a new one. Python
// operators ("__and__") end in '_' too; their class decides.
bool is_in_place(const std::string& base) {
    return base.size() > 1 && base.back() == '_' && base.rfind("__", 0) != 0;
}

// Bytes of the tensors a filling factory creates and writes (zeros, ones, full and their new_ kinds);
// -1 for other ops. An empty tensor is not written until an op that the estimate counts writes it.
double factory_bytes(const std::string& base, const std::vector<InputShape>& in, const std::vector<DType>& dtypes,
                     const ConcreteInputs* concrete) {
    if (base == "zeros" || base == "ones" || base == "full") {
        const double n = size_argument(concrete, 0);
        const size_t dtype_at = base == "full" ? 2 : 1;
        return n < 0 ? -1 : n * scalar_type_bytes(*concrete, dtype_at);
    }
    if (base == "new_zeros" || base == "new_ones" || base == "new_full") {
        const double n = size_argument(concrete, 1);
        const size_t dtype_at = base == "new_full" ? 3 : 2;
        return n < 0 ? -1 : n * scalar_type_bytes(*concrete, dtype_at);
    }
    if (base == "zeros_like" || base == "ones_like" || base == "full_like")
        return tensor_numel(in, 0) * dtype_bytes(dtypes.empty() ? DType::kFloat32 : dtypes[0]);
    return -1;
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

bool estimate_cost(const OpIdentity& op, const std::vector<InputShape>& inputs, const std::vector<DType>& dtypes,
                   const ConcreteInputs* concrete, double& flops, double& bytes) {
    if (inputs.empty()) return false;
    const OpClass op_class = op.op_class;
    if (op_class == OpClass::kActivation && is_identity_dropout(op.base, concrete)) {
        flops = bytes = 0;
        return true;
    }
    bytes = input_bytes(inputs, dtypes);
    double estimate = -1;
    switch (op_class) {
        case OpClass::kMatmul: estimate = matmul_flops(op.base, inputs); break;
        case OpClass::kConv: estimate = conv_flops(op.base, inputs, concrete); break;
        case OpClass::kRnn: estimate = rnn_flops(op.canonical_name, inputs); break;
        case OpClass::kAttention: estimate = is_attention_composite(op.base) ? -1 : attention_flops(inputs); break;
        case OpClass::kNorm:
        case OpClass::kSoftmax:
        case OpClass::kLoss: estimate = 5 * tensor_numel(inputs, 0); break;
        case OpClass::kActivation:
        case OpClass::kElementwise: estimate = largest_numel(inputs); break;
        case OpClass::kReduction:
        case OpClass::kPool: estimate = tensor_numel(inputs, 0); break;
        case OpClass::kOptimizer: estimate = 3 * total_numel(inputs); break;
        case OpClass::kEmbedding: estimate = 0; break;
        case OpClass::kMemory:
        case OpClass::kView: estimate = 0; break;
        default: break;
    }
    if (estimate < 0) return false;
    flops = estimate;
    return true;
}

double estimate_output_bytes(const OpIdentity& op, const std::vector<InputShape>& inputs,
                             const std::vector<DType>& dtypes, const ConcreteInputs* concrete) {
    const std::string& base = op.base;
    if (op.op_class == OpClass::kView || is_in_place(base)) return 0;
    const double factory = factory_bytes(base, inputs, dtypes, concrete);
    if (factory >= 0) return factory;
    if (inputs.empty()) return -1;
    const double element = dtype_bytes(dtypes.empty() ? DType::kFloat32 : dtypes[0]);
    switch (op.op_class) {
        case OpClass::kMatmul: {
            MatmulDims d;
            return matmul_dims(base, inputs, d) ? d.rows * d.columns * element : -1;
        }
        case OpClass::kConv: {
            ConvBackwardOperands at;
            if (conv_backward_operands(base, at))
                return (tensor_numel(inputs, at.input) + tensor_numel(inputs, at.weight)) * element;
            if (has(base, "backward")) return -1;
            const auto* x = dims_at(inputs, 0);
            const auto* w = dims_at(inputs, 1);
            if (!x || !w || x->size() < 3 || w->size() != x->size()) return -1;
            return static_cast<double>((*x)[0]) * static_cast<double>((*w)[0]) *
                   conv_output_spatial(base, *x, *w, concrete) * element;
        }
        case OpClass::kAttention:
            return is_attention_composite(base) ? -1 : tensor_numel(inputs, 0) * element;
        case OpClass::kActivation:
            return is_identity_dropout(base, concrete) ? 0 : largest_numel(inputs) * element;
        case OpClass::kElementwise: return largest_numel(inputs) * element;
        case OpClass::kNorm:
        case OpClass::kSoftmax: return tensor_numel(inputs, 0) * element;
        case OpClass::kEmbedding: {  // embedding(weight, indices): a row per index; embedding_bag: per bag
            const auto* weight = dims_at(inputs, 0);
            if (!weight || weight->size() != 2) return -1;
            const double width = static_cast<double>(weight->back()) * element;
            if (base == "embedding") return tensor_numel(inputs, 1) * width;
            if (base == "embedding_bag" || base == "_embedding_bag") return tensor_numel(inputs, 2) * width;
            return -1;
        }
        case OpClass::kMemory:
            if (base == "cat" || base == "stack") return total_numel(inputs) * element;
            if (base == "clone" || base == "_to_copy") return tensor_numel(inputs, 0) * element;
            return -1;
        case OpClass::kRnn: {  // a oneDNN layer: its outputs and gate workspace; its backward: the gradients
            if (base == "mkldnn_rnn_layer_backward" && inputs.size() >= 3)
                return (inputs[0].numel + inputs[1].numel + inputs[2].numel) * element;
            const auto* x = dims_at(inputs, 0);
            const auto* w_ih = dims_at(inputs, 1);
            if (base != "mkldnn_rnn_layer" || !x || !w_ih || x->size() < 2 || w_ih->empty()) return -1;
            return product(*x, 0, x->size() - 1) * static_cast<double>((*w_ih)[0]) * element;
        }
        default: return -1;
    }
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
