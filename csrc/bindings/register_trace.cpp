#include "bindings/register.hpp"

namespace itercast::bindings {
void register_trace(pybind11::module_& m) { (void)m; }
}  // namespace itercast::bindings
