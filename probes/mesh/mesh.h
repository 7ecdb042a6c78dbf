// The all-pairs mesh (`fabric-probe mesh`): with an agent on every host, every pair is
// tested in contention-free rounds (mesh_schedule.h), each pair delegated to the source
// host's agent with the "run" test (the agent runs the client side against the
// destination's agent and returns the report). The pairs of a round run in parallel. The
// headline of each report (summary.avg_gbps for bandwidth, summary.p50_us for latency)
// fills an N x N matrix; outliers (outliers.h) are flagged and measured once more. A pair
// that fails is a missing cell with its error, never an abort.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/tcp_socket.h"
#include "libs/pair_schedules/mesh_patterns.h"
#include "libs/pair_schedules/mesh_report.h"
#include "libs/pair_schedules/outliers.h"
#include "probes/mesh/mesh_hosts.h"
#include "probes/mesh/pair_scheduler.h"

namespace fabric::probes {

// One test of the mesh and how to read its reports.
struct MeshTest {
  std::string name;        // tcp_bw, tcp_lat, rdma_bw, rdma_lat
  std::string params_json; // the test's params object
  std::string metric;      // the summary field: "avg_gbps" or "p50_us"
  std::string unit;        // "Gb/s" or "us"
  Better better = Better::kHigher;
  bool ordered = true; // both directions (bandwidth) or each pair once (latency)
};

// The settings the mesh flags give every test; each test takes those it understands.
struct MeshTestSettings {
  std::optional<double> duration_s; // bandwidth tests
  std::optional<uint64_t> size;     // message / write size
  std::optional<uint64_t> iters;    // latency tests
  std::optional<uint64_t> streams;  // tcp_bw streams, rdma_bw queue pairs
  std::string extra_params_json;    // a JSON object merged into every test's params
};
Result<MeshTest> make_mesh_test(const std::string& name, const MeshTestSettings& settings);

// The result of one pair.
struct PairOutcome {
  std::optional<double> value;
  std::string error; // set when there is no value
};

// Runs `test` from `source` to `destination`; the default is delegate_pair() with the
// mesh's token.
using PairRunner =
    std::function<PairOutcome(const MeshHost& source, const MeshHost& destination,
                              const MeshTest& test, std::chrono::milliseconds timeout)>;

// Asks the source's agent to run the test against the destination's agent, presenting
// `token` to the source's agent when it asks (the source presents its own to the
// destination).
PairOutcome delegate_pair(const MeshHost& source, const MeshHost& destination, const MeshTest& test,
                          std::chrono::milliseconds timeout, const Token* token = nullptr);

// Reads `summary.<metric>` from a report document.
Result<double> report_metric(std::string_view report_json, const std::string& metric);

struct MeshProgress {
  const MeshTest* test = nullptr;
  std::size_t round = 0; // 1-based
  std::size_t rounds = 0;
  const MeshHost* source = nullptr;
  const MeshHost* destination = nullptr;
  bool retest = false;
};
using MeshProgressFn = std::function<void(const MeshProgress&)>;

struct MeshOptions {
  std::vector<MeshHost> hosts;
  std::vector<MeshTest> tests;
  std::chrono::milliseconds pair_timeout{std::chrono::seconds(60)};
  double outlier_threshold = 3.5;
  bool retest = true;
  std::optional<Token> token;                   // for agents that ask for one
  std::size_t parallel = kDefaultParallelPairs; // pairs running at a time
  // Set: a pattern and narrowing down (pattern_mesh.h) instead of every pair.
  std::optional<PatternSpec> pattern;
  bool narrow = true;
  double low_relative = 0.20; // narrowing: a result this much worse than the median is low
};

// delegate_pair() with the options' token.
PairRunner agent_pair_runner(const MeshOptions& options);

// One report per test, in the order of options.tests.
Result<std::vector<MeshReport>> run_mesh(const MeshOptions& options,
                                         const MeshProgressFn& progress = {},
                                         const PairRunner& runner = {});

// {"schema_version":1,"test":"mesh","hosts":[...],"tests":[<write_mesh_json per test>]}
std::string render_mesh_reports_json(const std::vector<MeshReport>& reports, bool pretty = true);

// `path` for a single test; "dir/name-<test>.ext" for each of several.
std::string per_test_path(const std::string& path, const std::string& test, bool several);

} // namespace fabric::probes
