// nccl-tests' NCCL_TESTS_SPLIT_MASK and NCCL_TESTS_SPLIT: ranks split into groups by a
// colour computed from their world rank, each group running the collective on its own
// communicator (the device lines' "Group" column). Parsed as nccl-tests' run() does, but a
// value it would misread (no operation, no number, MOD 0 or DIV 0) is a usage error naming
// the variable instead of colour 0 or a division by zero.
#pragma once

#include <optional>

#include "common/result.h"

namespace fabric::nccltest {

inline constexpr const char* kSplitMaskEnv = "NCCL_TESTS_SPLIT_MASK";
inline constexpr const char* kSplitEnv = "NCCL_TESTS_SPLIT";

// The colour of world rank `rank`, or nullopt when neither variable is set (no split). The
// mask is hexadecimal (`0x7` or `7`); NCCL_TESTS_SPLIT is `<op><value>` with op AND, OR,
// MOD, DIV or & | % / (any case, spaces allowed before the value) and the value decimal,
// 0x hexadecimal or 0b binary. The mask wins when both are set, as in nccl-tests.
Result<std::optional<int>> split_color(const char* mask, const char* split, int rank);

} // namespace fabric::nccltest
