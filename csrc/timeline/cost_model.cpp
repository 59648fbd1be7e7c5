#include "timeline/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "timeline/name_match.hpp"

namespace itercast::timeline {

namespace {

double tensor_numel(const std::vector<InputShape>& inputs, size_t index) {
    return index < inputs.size() ? inputs[index].numel : 0;
}

const std::vector<int64_t>* dims_at(const std::vector<InputShape>& inputs, size_t index) {
    return index < inputs.size() && inputs[index].is_tensor ? &inputs[index].dims : nullptr;
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

}  // namespace

bool is_recurrent_cell(const std::string& base) {
    return base == "lstm_cell" || base == "gru_cell" || base == "rnn_tanh_cell" || base == "rnn_relu_cell";
}

double product(const std::vector<int64_t>& dims, size_t from, size_t to) {
    double n = 1;
    for (size_t i = from; i < to && i < dims.size(); ++i) n *= static_cast<double>(std::max<int64_t>(dims[i], 0));
    return n;
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

}  // namespace itercast::timeline
