#include "bindings/register.hpp"

PYBIND11_MODULE(_native, m) {
    m.doc() = "itercast native core: streaming Kineto trace scanning and features";
    itercast::bindings::register_platform(m);
    itercast::bindings::register_trace(m);
    itercast::bindings::register_timeline(m);
    itercast::bindings::register_sim(m);
    itercast::bindings::register_forest(m);
    itercast::bindings::register_rows(m);
}
