// `fabric-probe mesh`'s flags as the user typed them, their check into MeshOptions, and
// the verdict its exit status comes from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probes/mesh/mesh.h"

namespace fabric::probes {

struct MeshArgs {
  std::string hosts; // a file, or a comma-separated list
  std::string tests = "rdma_bw,rdma_lat";
  std::optional<std::string> port;
  std::optional<std::string> duration;
  std::optional<std::string> size;
  std::optional<std::string> iters;
  std::optional<std::string> streams;
  std::optional<std::string> params;
  std::optional<std::string> pair_timeout;
  std::optional<std::string> outlier_threshold;
  std::optional<std::string> token_file; // else $FABRIC_PROBE_TOKEN_FILE
  std::optional<std::string> pattern;
  std::optional<std::string> seed;
  std::optional<std::string> parallel;
  std::optional<std::string> low;
  bool no_narrow = false;
  std::string csv;
  std::string heatmap;
  bool no_retest = false;
  bool json = false;
};

// All pairs hold an n x n matrix and take n - 1 rounds: past this many hosts, a pattern.
inline constexpr std::size_t kMaxAllPairsHosts = 1024;

// Reads the hosts file and the token file too; errors name the flag.
Result<MeshOptions> make_mesh_options(const MeshArgs& args);

// A system error when a pair had no result (exit 2), else below threshold when outliers
// were flagged (exit 3), else Ok.
Result<void> mesh_verdict(const std::vector<MeshReport>& reports);

} // namespace fabric::probes
