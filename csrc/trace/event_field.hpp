#pragma once
// Which Event column a member of a trace event goes to, by its key.
#include <cstdint>
#include <string_view>

namespace itercast::trace {

// The column a member's value goes to.
enum class Field : uint8_t {
    kNone,  // no column: the value is skipped
    kPh, kTs, kDur, kCat, kName, kPid, kTid, kArgs,
    kExternalId, kCorrelation, kSequenceNumber, kFwdThreadId, kStream, kDevice, kBytes,
    kInputDims, kInputTypes, kConcreteInputs, kGrid, kBlock,
};

// By the member's (unescaped) key: at the top level of an event, and inside its args.
Field event_field(std::string_view key);
Field arg_field(std::string_view key);

}  // namespace itercast::trace
