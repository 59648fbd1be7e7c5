// The row layout of the feature schema, read from its column names once.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "features/windows.hpp"
#include "predict/op_rows.hpp"
#include "timeline/op_features.hpp"

namespace itercast::predict {
namespace {

std::size_t column_named(const std::vector<timeline::FeatureColumn>& columns, std::string_view name) {
    const auto found = std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return c.name == name; });
    if (found == columns.end()) throw std::logic_error("the feature schema has no column " + std::string(name));
    return static_cast<std::size_t>(found - columns.begin());
}

bool is_class_column(const timeline::FeatureColumn& column) { return column.name.rfind("class=", 0) == 0; }

RowLayout read_schema() {
    const auto& columns = timeline::feature_columns();
    const auto first = std::find_if(columns.begin(), columns.end(), is_class_column);
    const auto end = std::find_if_not(first, columns.end(), is_class_column);
    // op_rows reads the class one-hot as one run of columns
    if (first == columns.end() || std::find_if(end, columns.end(), is_class_column) != columns.end()) {
        throw std::logic_error("the feature schema's class=... columns are not one run");
    }
    RowLayout layout;
    layout.op_features = columns.size();
    layout.aggregates = features::WindowBuilder::kAggregateCount;
    layout.class_begin = static_cast<std::size_t>(first - columns.begin());
    layout.class_end = static_cast<std::size_t>(end - columns.begin());
    layout.log_flops = column_named(columns, "log_flops");
    layout.log_bytes = column_named(columns, "log_bytes");
    layout.optimizer_phase = column_named(columns, "phase=optimizer");
    layout.log_nested_ops = column_named(columns, "log_nested_ops");
    return layout;
}

}  // namespace

const RowLayout& schema_row_layout() {
    static const RowLayout layout = read_schema();
    return layout;
}

}  // namespace itercast::predict
