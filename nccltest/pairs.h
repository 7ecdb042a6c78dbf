// --pairs: the collective on every two-node sub-communicator, in contention-free rounds
// (every pair of nodes once, no node twice in a round: fabric-probe mesh's schedule), then
// the nodes ranked by the busbw of their pairs and judged with fabric-probe mesh's robust
// statistics (median and scaled MAD; its thresholds), naming the slow node and the slow
// pair. This is the bisection nccl-tests' maintainers tell users to do by hand.
//
// Unlike the mesh, which compares a cell with its row and column, pairs are judged against
// all pairs: a row of four nodes holds three values, too few for a spread of their own. A
// node whose median pair is slow is a slow node; a slow pair between two nodes that are
// fine with everyone else is a slow link.
//
// At scale, all pairs are n - 1 rounds: --pairs-pattern runs one of fabric-probe mesh's
// patterns instead (a ring, or K random matchings: the ones that need no place in the
// fabric), then its narrowing down, whose follow-up rounds name the slow node or link.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "libs/pair_schedules/mesh_patterns.h"
#include "libs/pair_schedules/mesh_report.h"
#include "libs/pair_schedules/mesh_schedule.h"
#include "libs/pair_schedules/narrowing.h"
#include "nccltest/options.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

struct PairsPlan {
  std::vector<std::string> nodes;           // names, in order of their lowest rank
  std::vector<std::vector<int>> node_ranks; // ranks of each node
  std::vector<int> node_of_rank;            // by rank
  std::vector<probes::MeshRound> rounds;    // unordered pairs (a < b)
  probes::PatternPlan pattern;              // what the rounds are, and what they load
  PairsBy by = PairsBy::kHost;
};

// Nodes are hosts (--pairs-by host) or single ranks (--pairs-by rank). Pairs of ranks run
// one at a time, since ranks on one host share what the measurement is about.
Result<PairsPlan> plan_pairs(const std::vector<RankInfo>& ranks, PairsBy by,
                             const probes::PatternSpec& pattern = {});

// A round as it runs: by rank, one pair at a time (see plan_pairs).
std::vector<probes::MeshRound> rounds_to_run(const PairsPlan& plan, const probes::MeshRound& round);

// The sub-communicator colour of `rank` in `round`: the index of its node's pair, or -1
// when its node sits the round out.
int pair_color(const PairsPlan& plan, const probes::MeshRound& round, int rank);
int pair_color(const PairsPlan& plan, std::size_t round, int rank); // plan.rounds[round]

struct PairMeasurement {
  std::size_t round = 0;    // 0-based; follow-up rounds come after the pattern's
  std::size_t a = 0, b = 0; // node indices, a < b
  double time_us = 0;       // the slower rank's time: the pair finishes when it does
  double busbw = 0;         // GB/s
};

struct NodeStanding {
  std::size_t node = 0;
  double median_busbw = 0; // over its pairs
  bool flagged = false;
};

struct PairsReport {
  std::string collective;
  std::size_t bytes = 0;
  DataType type = DataType::kFloat;
  std::string op;
  int iters = 0;
  PairsBy by = PairsBy::kHost;
  std::vector<std::string> nodes;
  std::string pattern; // describe_plan(): "ring: 2 rounds, 4 pair tests; ..."
  bool all_pairs = true;
  std::vector<PairMeasurement> pairs;      // the pattern's
  std::vector<PairMeasurement> follow_ups; // narrowing's, after a pattern
  std::vector<NodeStanding> ranking;       // slowest first
  probes::MeshReport mesh;                 // the node x node matrix and its outliers
  std::string verdict;                     // one sentence
};

// Builds the matrix, its outliers, the ranking and the verdict from the measurements.
Result<PairsReport> assemble_pairs(const PairsPlan& plan, std::vector<PairMeasurement> pairs,
                                   PairsReport header);

// After a pattern: the follow-ups join the report, and narrowing's verdict replaces the
// all-pairs judgement (a ring gives each node two partners, too few to judge it by its
// median pair): a slow node is flagged, a slow path is the one flagged pair.
void apply_narrowing(PairsReport& report, const probes::Narrowing& narrowing,
                     std::vector<PairMeasurement> follow_ups);

// '#' lines: one per pair, the ranking, the flagged pairs and the verdict.
std::string render_pairs_text(const PairsReport& report);

} // namespace fabric::nccltest
