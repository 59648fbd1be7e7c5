#pragma once
// Which vector instructions the native code uses, chosen at run time: the best this CPU runs, capped
// by the environment variable ITERCAST_SIMD (auto, avx512, avx2 or portable), read once. A build
// targets baseline x86-64, so one binary (a wheel) runs on any x86-64 CPU; ITERCAST_SIMD=portable
// forces the baseline code everywhere, which must give the same results bit for bit.
namespace itercast::platform {

enum class SimdLevel { Portable = 0, Avx2 = 1, Avx512 = 2 };

inline constexpr const char* kSimdVariable = "ITERCAST_SIMD";

SimdLevel cpu_simd_level();  // the best this CPU (and its OS) runs
// min(cpu_simd_level(), $ITERCAST_SIMD); throws std::invalid_argument when the variable holds
// anything but auto, avx512, avx2, portable or nothing.
SimdLevel simd_level();
const char* simd_level_name(SimdLevel level);  // "portable", "avx2" or "avx512"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ITERCAST_X86_DISPATCH 1
namespace detail {
// flatten inlines body() into these, so that its vector code is compiled for their instructions.
template <class Body>
__attribute__((target("avx512f"), flatten)) void run_avx512(const Body& body) { body(); }
template <class Body>
__attribute__((target("avx2"), flatten)) void run_avx2(const Body& body) { body(); }
}  // namespace detail
#endif

// Runs body() compiled for simd_level()'s instructions (GCC/Clang vector extensions in it widen to
// them); the baseline copy elsewhere and where ITERCAST_SIMD=portable.
template <class Body>
void run_at_simd_level(const Body& body) {
#ifdef ITERCAST_X86_DISPATCH
    switch (simd_level()) {
        case SimdLevel::Avx512: return detail::run_avx512(body);
        case SimdLevel::Avx2: return detail::run_avx2(body);
        case SimdLevel::Portable: break;
    }
#endif
    body();
}

}  // namespace itercast::platform
