// The mesh at fleet scale (`fabric-probe mesh --pattern`): a pattern's rounds
// (mesh_patterns.h) instead of every pair, then follow-up rounds that name the slow node,
// uplink or path (narrowing.h). Pairs run through the agents as in the all-pairs mesh, in
// the pair scheduler (pair_scheduler.h), so a dead or slow agent costs only its own pairs.
// Results are kept as a list of measured pairs, linear in hosts x rounds: at 10,000 hosts
// a ring is 20,000 results, never a 10,000 x 10,000 matrix.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "libs/pair_schedules/narrowing.h"
#include "probes/mesh/mesh.h"

namespace fabric::probes {

struct PatternMeshReport {
  std::string metric; // the test: "tcp_bw", ...
  std::string unit;
  Better better = Better::kHigher;
  std::vector<std::string> hosts;  // names, in the hosts file's order
  std::vector<std::string> leaves; // one per host, "" without places
  std::string plan;                // describe_plan()
  std::size_t pattern_rounds = 0;
  std::vector<PairResult> results;   // the pattern's, then the follow-ups'
  std::vector<MeshFailure> failures; // pairs without a result, with their errors
  bool narrowed = false;             // narrowing ran (else: the pattern only)
  Narrowing narrowing;               // baseline, limit, verdict; follow_ups are in results
};

// One report per test. Errors for a pattern the hosts cannot follow.
Result<std::vector<PatternMeshReport>> run_pattern_mesh(const MeshOptions& options,
                                                        const MeshProgressFn& progress = {},
                                                        const PairRunner& runner = {});

} // namespace fabric::probes
