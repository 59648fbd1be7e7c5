// Python bindings of how the module was built and which SIMD level it runs (csrc/platform).
#include <pybind11/pybind11.h>

#include "bindings/register.hpp"
#include "platform/build_info.hpp"
#include "platform/simd.hpp"

namespace py = pybind11;

namespace itercast::bindings {
namespace {

py::dict build_info_dict() {
    const platform::BuildInfo build = platform::build_info();
    py::dict info;
    info["version"] = build.version;
    info["compiler"] = build.compiler;
    info["build_type"] = build.build_type;
    info["cxx_flags"] = build.cxx_flags;
    info["link_flags"] = build.link_flags;
    info["simd"] = platform::simd_level_name(platform::simd_level());
    info["cpu_simd"] = platform::simd_level_name(platform::cpu_simd_level());
    info["simd_variable"] = platform::kSimdVariable;
    return info;
}

}  // namespace

void register_platform(py::module_& m) {
    platform::simd_level();  // a bad ITERCAST_SIMD fails the import, naming the variable
    m.def("build_info", &build_info_dict,
          "How this module was built (version, compiler, build_type, cxx_flags, link_flags) and the SIMD level "
          "it runs: simd, chosen at run time as the CPU's best (cpu_simd) capped by $ITERCAST_SIMD (simd_variable).");
}

}  // namespace itercast::bindings
