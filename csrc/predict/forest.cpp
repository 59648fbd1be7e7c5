// Scoring a Forest: which layout and kernel each block of rows takes (forest_kernels.hpp), and
// threads. The model text is read in forest_text.cpp, the layouts built in forest_layouts.cpp.
#include "predict/forest.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "platform/simd.hpp"
#include "predict/forest_kernels.hpp"

namespace itercast::predict {

void Forest::build_layouts() {
    slots_ = build_feature_slots(tree_, linear_.feature, static_cast<std::size_t>(num_features_));
    build_linear_leaves(linear_, slots_, has_linear_);
    fast_ = build_fast_layout(tree_, slots_);
    bits_ = build_bit_layout(tree_, slots_, has_linear_ ? &linear_ : nullptr);
}

bool Forest::identity_output() const {
    static const char* const identity[] = {"regression", "regression_l1", "huber", "fair", "quantile", "mape", "custom"};
    for (const char* name : identity) {
        if (objective_ == name) return true;
    }
    return objective_.empty();
}

void Forest::set_linear_bounds(std::vector<float> low, std::vector<float> high) {
    const auto n = static_cast<std::size_t>(num_features_);
    if (low.size() != n || high.size() != n) {
        throw std::invalid_argument("linear bounds: " + std::to_string(low.size()) + " low and " +
                                    std::to_string(high.size()) + " high values for " + std::to_string(n) +
                                    " features");
    }
    for (std::size_t f = 0; f < n; ++f) {
        if (!(low[f] <= high[f])) {
            throw std::invalid_argument("linear bounds: feature " + std::to_string(f) + " has low " +
                                        std::to_string(low[f]) + " > high " + std::to_string(high[f]));
        }
    }
    linear_.low = std::move(low);
    linear_.high = std::move(high);
    linear_.slot_low.clear();
    linear_.slot_high.clear();
    for (std::uint32_t feature : slots_.used) {
        linear_.slot_low.push_back(linear_.low[feature]);
        linear_.slot_high.push_back(linear_.high[feature]);
    }
}

namespace {
std::atomic<bool> force_portable{false};

bool use_avx512() {
#ifdef ITERCAST_AVX512
    return platform::simd_level() == platform::SimdLevel::Avx512 && !force_portable.load(std::memory_order_relaxed);
#else
    return false;
#endif
}
}  // namespace

void set_bit_kernel(BitKernel kernel) { force_portable.store(kernel == BitKernel::Portable); }

const char* bit_kernel_name() { return use_avx512() ? "avx512" : "portable"; }

void Forest::score_group(bool wide, const float* transposed, std::uint16_t* masks, std::int32_t* reached,
                         double* widened, double* sum) const {
    const std::size_t trees = tree_.trees(), slots = slots_.used.size();
#ifdef ITERCAST_AVX512
    if (wide) {
        score_bits_avx512(bits_, trees, transposed, masks, sum, reached);
        if (reached) add_linear_terms_avx512(bits_, linear_, trees, slots, reached, transposed, widened, sum);
        return;
    }
#else
    (void)wide;
    (void)masks;
#endif
    if (bits_.usable) {
        score_bits(bits_, trees, transposed, sum, reached);
    } else {
        score_fast(fast_, tree_, transposed, sum, reached);
    }
    if (reached) add_linear_terms(linear_, trees, slots, reached, transposed, widened, sum);
}

void Forest::predict_block(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                           const std::int64_t* select) const {
    const std::size_t f = static_cast<std::size_t>(num_features_);
    const bool plain = !has_special_;  // fast paths unless a row holds NaN
    const bool wide = plain && bits_.usable && use_avx512();
    // rows per block: 32 x 214 floats stay in L1 (general path); the wide kernel takes 64 at once
    const std::size_t B = wide ? kWideGroup : 32;
    const std::size_t group = wide ? kWideGroup : kGroup;
    std::vector<float> block(B * std::max<std::size_t>(f, 1));
    std::vector<float> transposed(group * std::max<std::size_t>(slots_.used.size(), 1));
    std::vector<std::uint16_t> masks(wide ? bits_.tests.size() * (kWideGroup / 16) : 0);
    // linear leaves: the kernels say which leaf each row reached, add_linear_terms adds their outputs
    std::vector<std::int32_t> leaves(has_linear_ ? group * tree_.trees() : 0);
    std::int32_t* const reached = has_linear_ ? leaves.data() : nullptr;
    std::vector<double> widened(has_linear_ ? transposed.size() : 0);
    for (std::size_t r0 = 0; r0 < rows; r0 += B) {
        const std::size_t n = std::min(B, rows - r0);
        bool any_nan = false;
        if (plain) {
            // Each group of rows is copied feature-major straight from x, read as LightGBM reads it;
            // features no split reads are skipped (a NaN there changes no score).
            for (std::size_t g0 = 0; g0 < n; g0 += group) {
                const std::size_t count = std::min(group, n - g0);
#ifdef ITERCAST_AVX512
                // 32-bit gather offsets: rows of one group, at most 63 row strides apart
                const bool gather = wide && !select && (kWideGroup - 1) * row_stride < (std::size_t{1} << 31);
                const bool nan = gather ? transpose_avx512(slots_, x + (r0 + g0) * row_stride, row_stride, count,
                                                           transposed.data())
                                        : transpose(slots_, x, row_stride, select, r0 + g0, count, group,
                                                    transposed.data());
#else
                const bool nan = transpose(slots_, x, row_stride, select, r0 + g0, count, group, transposed.data());
#endif
                if (nan) {
                    any_nan = true;  // the whole block takes the general path
                    break;
                }
                double sum[kWideGroup] = {};
                score_group(wide, transposed.data(), masks.data(), reached, widened.data(), sum);
                for (std::size_t g = 0; g < count; ++g) out[r0 + g0 + g] = sum[g];
            }
            if (!any_nan) continue;
        }
        for (std::size_t i = 0; i < n; ++i) {
            const float* in = x + (select ? static_cast<std::size_t>(select[r0 + i]) : r0 + i) * row_stride;
            float* dst = block.data() + i * f;
            for (std::size_t j = 0; j < f; ++j) {
                const float v = in[j];
                any_nan |= v != v;
                dst[j] = std::fabs(v) <= kZeroThreshold ? 0.0f : v;
            }
        }
        if (has_special_ || any_nan) {
            score_rows<true>(tree_, linear_, has_linear_, f, block.data(), n, out + r0);
        } else {
            score_rows<false>(tree_, linear_, has_linear_, f, block.data(), n, out + r0);
        }
    }
}

void Forest::predict(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                     const std::int64_t* select, int threads) const {
    constexpr std::size_t kRowsPerThread = 2048;
    std::size_t parts = threads > 1 ? std::min<std::size_t>(static_cast<std::size_t>(threads), rows / kRowsPerThread) : 1;
    if (parts <= 1) {
        predict_block(x, rows, row_stride, out, select);
        return;
    }
    std::vector<std::thread> workers;
    const std::size_t chunk = (rows + parts - 1) / parts;
    for (std::size_t p = 1; p < parts; ++p) {
        const std::size_t begin = p * chunk, end = std::min(rows, begin + chunk);
        if (begin >= end) break;
        workers.emplace_back([=] {
            predict_block(select ? x : x + begin * row_stride, end - begin, row_stride, out + begin,
                          select ? select + begin : nullptr);
        });
    }
    predict_block(x, std::min(rows, chunk), row_stride, out, select);
    for (auto& w : workers) w.join();
}

}  // namespace itercast::predict
