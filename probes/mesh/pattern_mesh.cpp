#include "probes/mesh/pattern_mesh.h"

#include <mutex>

namespace fabric::probes {
namespace {

// Runs `rounds` through the scheduler; results and failures are appended in round order.
class PatternRun {
public:
  PatternRun(const MeshOptions& options, const MeshTest& test, const PairRunner& runner,
             const MeshProgressFn& progress, PatternMeshReport& report)
      : options_(options), test_(test), runner_(runner), progress_(progress), report_(report) {}

  // `first_round` is the 1-based number of rounds[0]; `of` the rounds planned.
  std::vector<std::optional<double>> run(const std::vector<MeshRound>& rounds,
                                         std::size_t first_round, std::size_t of, bool follow_up) {
    std::vector<std::vector<PairOutcome>> outcomes(rounds.size());
    for (std::size_t r = 0; r < rounds.size(); ++r)
      outcomes[r].resize(rounds[r].size());
    run_scheduled_pairs(rounds, options_.hosts.size(), options_.parallel,
                        [&](std::size_t r, std::size_t i) {
                          const MeshHost& src = options_.hosts[rounds[r][i].first];
                          const MeshHost& dst = options_.hosts[rounds[r][i].second];
                          if (progress_) {
                            std::lock_guard lock(progress_mutex_);
                            progress_({&test_, first_round + r, of, &src, &dst, follow_up});
                          }
                          outcomes[r][i] = runner_(src, dst, test_, options_.pair_timeout);
                        });
    std::vector<std::optional<double>> values;
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      for (std::size_t i = 0; i < rounds[r].size(); ++i) {
        auto [src, dst] = rounds[r][i];
        const PairOutcome& o = outcomes[r][i];
        report_.results.push_back({src, dst, o.value, first_round + r});
        if (!o.value) report_.failures.push_back({src, dst, o.error});
        values.push_back(o.value);
      }
    }
    return values;
  }

private:
  const MeshOptions& options_;
  const MeshTest& test_;
  const PairRunner& runner_;
  const MeshProgressFn& progress_;
  PatternMeshReport& report_;
  std::mutex progress_mutex_;
};

} // namespace

Result<std::vector<PatternMeshReport>> run_pattern_mesh(const MeshOptions& options,
                                                        const MeshProgressFn& progress,
                                                        const PairRunner& given_runner) {
  const PairRunner runner = given_runner ? given_runner : agent_pair_runner(options);
  const PatternSpec spec = options.pattern.value_or(PatternSpec{});
  std::vector<PatternMeshReport> reports;
  for (const MeshTest& test : options.tests) {
    PatternMeshReport report;
    report.metric = test.name;
    report.unit = test.unit;
    report.better = test.better;
    for (const auto& h : options.hosts)
      report.hosts.push_back(h.name);
    report.leaves = leaves_of(options.hosts);
    FABRIC_ASSIGN_OR_RETURN(PatternPlan plan, plan_pattern(spec, report.leaves, test.ordered));
    report.plan = describe_plan(plan);
    report.pattern_rounds = plan.rounds.size();

    PatternRun run(options, test, runner, progress, report);
    run.run(plan.rounds, 1, plan.rounds.size(), false);
    plan.rounds.clear(); // not needed any longer: at 10,000 hosts it is as large as results

    NarrowingOptions narrowing;
    narrowing.better = test.better;
    narrowing.threshold = options.outlier_threshold;
    narrowing.min_relative = options.low_relative;
    // A rate is judged on the ratio scale, as fabric-nccltest --pairs judges bus bandwidth:
    // a linear MAD of widely spread rates can exceed the median itself, a limit below zero
    // under which no rate can fall, and "no fault" from a rule that could see none.
    narrowing.ratio_scale = test.better == Better::kHigher;
    // Without narrowing, no follow-up round: the verdict stands on the pattern alone.
    narrowing.follow_up = options.narrow;
    report.narrowed = options.narrow;
    const std::vector<PairResult> pattern_results = report.results;
    FABRIC_ASSIGN_OR_RETURN(report.narrowing,
                            narrow_down(pattern_results, report.pattern_rounds, report.hosts,
                                        report.leaves, narrowing,
                                        [&](const MeshRound& round, std::size_t number) {
                                          return run.run({round}, number, number, true);
                                        }));
    reports.push_back(std::move(report));
  }
  return reports;
}

} // namespace fabric::probes
