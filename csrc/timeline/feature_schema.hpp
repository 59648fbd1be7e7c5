#pragma once
// The version of the per-op feature layout and meaning (op_features.cpp, windows.cpp). Models record
// it and refuse another; the Python package reads it from the native module (FEATURE_SCHEMA_VERSION).
// 3: recurrent layers' backward ops get FLOPs.
// 4: ... from their weights (the nested layer backward), not from the output gradient alone.
// 5: a dropout with p = 0 costs nothing (no FLOPs, no bytes).
// 6: scaled_dot_product_attention is costed by the kernel nested in it.
// 7: log_output_bytes, the bytes of the tensors an op creates.
// 8: an autograd node's shapes are those of the first op it runs with two tensor operands.
// 9: a recurrent cell called per time step (lstm_cell, gru_cell, ...) is a matrix product, not a layer.
namespace itercast::timeline {

inline constexpr int kFeatureSchemaVersion = 9;

}  // namespace itercast::timeline
