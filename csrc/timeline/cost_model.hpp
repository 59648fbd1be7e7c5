#pragma once
// The cost model: an op's estimated FLOPs and the bytes it reads and writes, from its name, input
// shapes, dtypes and scalar arguments alone (never from measured times). The op features
// (op_features) carry these; the roofline prior and the booster learn time from them.
#include <cstdint>
#include <string>
#include <vector>

#include "timeline/op_features.hpp"
#include "timeline/shapes.hpp"

namespace itercast::timeline {

// Estimated FLOPs and bytes read of one op from its own inputs; false when
// the op has no formula (callers then sum its nested ops).
// `concrete` (scalar arguments: strides, padding, ...) may be null.
bool estimate_cost(const OpIdentity& op, const std::vector<InputShape>& inputs, const std::vector<DType>& dtypes,
                   const ConcreteInputs* concrete, double& flops, double& bytes);

// Bytes of the tensors one op creates and writes (its results; none for views and in-place ops);
// -1 when its inputs do not say (callers then sum its nested ops). On a CPU, writing fresh memory
// is what costs: a 2-row weight gradient of an 8192-wide layer reads 128 KB and writes 256 MB.
double estimate_output_bytes(const OpIdentity& op, const std::vector<InputShape>& inputs,
                             const std::vector<DType>& dtypes, const ConcreteInputs* concrete);

// One time step of a recurrent cell called from Python (nn.LSTMCell, nn.GRUCell, nn.RNNCell): its
// gates are one product of [input, hidden] with the stacked weights plus pointwise work, closer to
// an addmm than to a fused whole-sequence layer, which runs T such steps per call.
bool is_recurrent_cell(const std::string& base);

// Elements in dims[from, to), negative dims as 0.
double product(const std::vector<int64_t>& dims, size_t from, size_t to);

}  // namespace itercast::timeline
