#include "probes/mesh/mesh_args.h"

#include <chrono>
#include <string_view>

#include "common/units.h"
#include "libs/agent_channel/auth.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {

Result<MeshOptions> make_mesh_options(const MeshArgs& a) {
  MeshOptions o;
  FABRIC_ASSIGN_OR_RETURN(uint16_t default_port, parse_agent_port(a.port));
  FABRIC_ASSIGN_OR_RETURN(o.hosts, load_mesh_hosts(a.hosts, default_port));

  MeshTestSettings s;
  if (a.duration) {
    FABRIC_ASSIGN_OR_RETURN(auto d, units::parse_duration(*a.duration, "--duration"));
    s.duration_s = units::seconds(d);
    if (!(*s.duration_s > 0)) {
      return Error(ErrorCode::kInvalidArgument, "--duration", "must be positive");
    }
  } else {
    s.duration_s = 3.0; // a mesh has many pairs: shorter than a single test's 10 s
  }
  if (a.size) {
    FABRIC_ASSIGN_OR_RETURN(s.size, units::parse_size(*a.size, "--size"));
  }
  if (a.iters) {
    FABRIC_ASSIGN_OR_RETURN(s.iters, units::parse_uint(*a.iters, "--iters", 1));
  }
  if (a.streams) {
    FABRIC_ASSIGN_OR_RETURN(s.streams, units::parse_uint(*a.streams, "--streams", 1, 128));
  }
  if (a.params) s.extra_params_json = *a.params;

  std::string_view rest = a.tests;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    if (name.empty()) continue;
    FABRIC_ASSIGN_OR_RETURN(MeshTest test, make_mesh_test(name, s));
    o.tests.push_back(std::move(test));
  }
  if (o.tests.empty()) return Error(ErrorCode::kInvalidArgument, "--test", "names no test");

  if (a.pair_timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto t, units::parse_duration(*a.pair_timeout, "--pair-timeout"));
    o.pair_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(t);
  } else {
    // Enough for the test itself plus connection set-up and a slow agent.
    o.pair_timeout = std::chrono::milliseconds(static_cast<int64_t>(*s.duration_s * 1000)) +
                     std::chrono::seconds(60);
  }
  if (o.pair_timeout.count() < 1000 ||
      o.pair_timeout.count() <= static_cast<int64_t>(*s.duration_s * 1000)) {
    return Error(ErrorCode::kInvalidArgument, "--pair-timeout",
                 "must be at least 1 s and longer than --duration");
  }
  if (a.outlier_threshold) {
    FABRIC_ASSIGN_OR_RETURN(o.outlier_threshold,
                            units::parse_positive(*a.outlier_threshold, "--outlier-threshold"));
  }
  o.retest = !a.no_retest;
  if (a.pattern) {
    FABRIC_ASSIGN_OR_RETURN(o.pattern, parse_pattern(*a.pattern));
  }
  if (a.seed) {
    if (!o.pattern || o.pattern->kind != PatternKind::kRandom) {
      return Error(ErrorCode::kInvalidArgument, "--seed", "only random patterns take a seed");
    }
    FABRIC_ASSIGN_OR_RETURN(o.pattern->seed, units::parse_uint(*a.seed, "--seed"));
  }
  if ((!o.pattern || o.pattern->kind == PatternKind::kAllPairs) &&
      o.hosts.size() > kMaxAllPairsHosts) {
    return Error(
        ErrorCode::kInvalidArgument, "--hosts",
        std::to_string(o.hosts.size()) + " hosts are " + std::to_string(o.hosts.size() - 1) +
            " rounds of all pairs and an n x n matrix; above " + std::to_string(kMaxAllPairsHosts) +
            " hosts choose a --pattern (ring, random:K, leaf-local, cross-leaf)");
  }
  if (a.parallel) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t parallel,
                            units::parse_uint(*a.parallel, "--parallel", 1, kMaxParallelPairs));
    o.parallel = static_cast<std::size_t>(parallel);
  }
  if (a.low) {
    FABRIC_ASSIGN_OR_RETURN(double low, units::parse_positive(*a.low, "--low"));
    if (low >= 100) return Error(ErrorCode::kInvalidArgument, "--low", "must be below 100 (%)");
    o.low_relative = low / 100;
  }
  if (a.no_narrow && !o.pattern) {
    return Error(ErrorCode::kInvalidArgument, "--no-narrow", "only applies with --pattern");
  }
  o.narrow = !a.no_narrow;
  FABRIC_ASSIGN_OR_RETURN(o.token, load_token(a.token_file));
  return o;
}

Result<void> mesh_verdict(const std::vector<MeshReport>& reports) {
  std::size_t failed = 0, flagged = 0;
  for (const auto& r : reports) {
    failed += r.failures.size();
    flagged += r.outliers.cells.size() + r.outliers.hosts.size();
  }
  if (failed > 0) {
    return Error(ErrorCode::kSystem, "mesh", std::to_string(failed) + " pairs without a result");
  }
  if (flagged > 0) {
    return Error(ErrorCode::kBelowThreshold, "mesh", std::to_string(flagged) + " outliers flagged");
  }
  return Ok();
}

} // namespace fabric::probes
