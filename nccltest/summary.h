// The footer's numbers from a run's rows: nccl-tests' average bus bandwidth (over every
// out-of-place and in-place row), and the threshold verdict, judged on the average over
// sizes of 64 MiB and more (where the bandwidth a fabric should give is reached).
#pragma once

#include <optional>
#include <vector>

#include "nccltest/report.h"

namespace fabric::nccltest {

inline constexpr std::size_t kJudgedFromBytes = std::size_t{64} << 20;

// nccl-tests' "Avg bus bandwidth": the mean busbw of every placement of every row.
double average_busbw(const std::vector<SizeRow>& rows);

// Fills avg_busbw, judged_busbw/judged_on and threshold_ok (when a threshold is set).
// NCCL_TESTS_MIN_BW keeps nccl-tests' meaning: it fails when the average over every size
// (the "Avg bus bandwidth" line) is below 0.9 x the value.
void apply_threshold(RunFooter& footer, const std::vector<SizeRow>& rows);

// The run's exit status from its footer: 3 (below threshold) when a check found a wrong
// element, when the threshold was missed, or when --require-rdma was given and NCCL fell
// back to sockets on some rank; else 0.
int run_exit_status(const RunFooter& footer, bool require_rdma, bool socket_fallback);

// Parses NCCL_TESTS_MIN_BW as nccl-tests does (a number of GB/s); nullopt when unset or
// not a positive number.
std::optional<double> nccl_tests_min_bw(const char* value);

} // namespace fabric::nccltest
