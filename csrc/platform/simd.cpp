#include "platform/simd.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace itercast::platform {

SimdLevel cpu_simd_level() {
#ifdef ITERCAST_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return SimdLevel::Avx512;
    if (__builtin_cpu_supports("avx2")) return SimdLevel::Avx2;
#endif
    return SimdLevel::Portable;
}

namespace {

SimdLevel simd_cap(const char* setting) {
    const std::string text = setting ? setting : "";
    if (text.empty() || text == "auto" || text == "avx512") return SimdLevel::Avx512;
    if (text == "avx2") return SimdLevel::Avx2;
    if (text == "portable") return SimdLevel::Portable;
    throw std::invalid_argument(std::string(kSimdVariable) + "='" + text +
                                "': expected auto, avx512, avx2 or portable");
}

SimdLevel chosen_simd_level() { return std::min(cpu_simd_level(), simd_cap(std::getenv(kSimdVariable))); }

}  // namespace

SimdLevel simd_level() {
    static const SimdLevel level = chosen_simd_level();  // a throw leaves it to the next call
    return level;
}

const char* simd_level_name(SimdLevel level) {
    switch (level) {
        case SimdLevel::Avx512: return "avx512";
        case SimdLevel::Avx2: return "avx2";
        case SimdLevel::Portable: break;
    }
    return "portable";
}

}  // namespace itercast::platform
