#include "nccltest/env_filter.h"

#include <algorithm>
#include <cctype>
#include <unistd.h> // environ: declared with _GNU_SOURCE, which g++ defines

namespace fabric::nccltest {
namespace {

bool contains_word(std::string_view name, std::string_view word) {
  auto it = std::search(name.begin(), name.end(), word.begin(), word.end(), [](char a, char b) {
    return std::toupper(static_cast<unsigned char>(a)) == b;
  });
  return it != name.end();
}

} // namespace

bool env_name_reported(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"NCCL_", "CUDA_", "UCX_", "OMPI_", "PMIX_"};
  static constexpr std::string_view kSecrets[] = {"KEY", "TOKEN", "SECRET", "PASSWORD"};
  bool wanted = std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                            [&](std::string_view p) { return name.starts_with(p); });
  if (!wanted) return false;
  // Open MPI and PMIx export dozens of variables, some of them with credentials for their
  // own daemons (PMIX_SECURITY_CREDENTIAL...): of theirs, only the rank placement.
  if (name.starts_with("OMPI_") || name.starts_with("PMIX_")) {
    static constexpr std::string_view kRankVariables[] = {"OMPI_COMM_WORLD_RANK",
                                                          "OMPI_COMM_WORLD_SIZE",
                                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                          "OMPI_COMM_WORLD_NODE_RANK",
                                                          "OMPI_UNIVERSE_SIZE",
                                                          "PMIX_RANK",
                                                          "PMIX_NAMESPACE"};
    wanted = std::any_of(std::begin(kRankVariables), std::end(kRankVariables),
                         [&](std::string_view v) { return name == v; });
  }
  if (!wanted) return false;
  return std::none_of(std::begin(kSecrets), std::end(kSecrets),
                      [&](std::string_view s) { return contains_word(name, s); });
}

std::vector<std::string> filter_environment(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  for (const std::string& entry : entries) {
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    if (env_name_reported(std::string_view(entry).substr(0, eq))) out.push_back(entry);
  }
  return out;
}

std::vector<std::string> reported_environment() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    entries.emplace_back(*e);
  return filter_environment(entries);
}

} // namespace fabric::nccltest
