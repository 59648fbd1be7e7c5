#pragma once
// Matching op names: lower-casing, substring tests and the base name, shared by the op
// classifier (op_features) and the cost model.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>

namespace itercast::timeline {

inline std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

inline bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

inline bool has_any(const std::string& text, std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const char* part) { return has(text, part); });
}

// The last component of "aten::foo" / "foo", lowercased, for exact-word tests.
inline std::string base_name(const std::string& lowered) {
    const size_t colon = lowered.rfind("::");
    return colon == std::string::npos ? lowered : lowered.substr(colon + 2);
}

}  // namespace itercast::timeline
