// Which environment variables a JSON report may carry. nccl-tests writes the whole
// environment, secrets included; fabric-nccltest keeps only what describes the collective
// stack (NCCL_*, CUDA_*, UCX_*, and Open MPI's / PMIx's rank variables) and drops any name
// containing KEY, TOKEN, SECRET or PASSWORD even there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabric::nccltest {

bool env_name_reported(std::string_view name);

// "NAME=value" entries of `environ`-style input that pass env_name_reported, in order.
// Entries without '=' are dropped.
std::vector<std::string> filter_environment(const std::vector<std::string>& entries);

// The process's own environment, filtered.
std::vector<std::string> reported_environment();

} // namespace fabric::nccltest
