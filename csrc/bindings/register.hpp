#pragma once
// One registration function per concept; module.cpp calls them all.
#include <pybind11/pybind11.h>

namespace itercast::bindings {
void register_trace(pybind11::module_& m);
void register_timeline(pybind11::module_& m);
void register_sim(pybind11::module_& m);
void register_forest(pybind11::module_& m);
void register_rows(pybind11::module_& m);
void register_platform(pybind11::module_& m);
}  // namespace itercast::bindings
