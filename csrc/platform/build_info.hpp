#pragma once
// How this native module was built, for `itercast --version` and bug reports.
namespace itercast::platform {

struct BuildInfo {
    const char* version;     // python/itercast/_version.py at build time
    const char* compiler;    // e.g. "GNU 12.2.0"
    const char* build_type;  // CMake's, e.g. "Release"
    const char* cxx_flags;   // what the core is compiled with (baseline ISA: no -march)
    const char* link_flags;  // extra flags the module is linked with
};

BuildInfo build_info();

}  // namespace itercast::platform
