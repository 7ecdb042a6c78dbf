#include "libs/pair_schedules/narrowing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fabric::probes {
namespace {

// One explanation of the low results.
struct Suspect {
  FaultKind kind = FaultKind::kNode;
  std::size_t a = 0, b = 0; // node: a; path: a, b
  std::string leaf;         // uplink
};

class Narrower {
public:
  Narrower(const std::vector<std::string>& names, const std::vector<std::string>& leaves,
           const NarrowingOptions& options)
      : names_(names), leaves_(leaves), options_(options),
        placed_(!leaves.empty() && !leaves.front().empty()) {
    for (std::size_t h = 0; h < leaves.size(); ++h)
      by_leaf_[leaves[h]].push_back(h);
  }

  void set_baseline(const std::vector<PairResult>& pattern) {
    std::vector<double> values;
    for (const auto& r : pattern)
      if (r.value) values.push_back(scaled(*r.value));
    const RobustStats s = robust_stats(std::move(values));
    baseline_ = s.median;
    limit_ =
        options_.ratio_scale
            ? std::max(options_.threshold * s.mad, -std::log(1.0 - options_.min_relative))
            : std::max(options_.threshold * s.mad, options_.min_relative * std::fabs(s.median));
  }
  // Both in the values' own units, whatever the scale judged on.
  double baseline() const { return options_.ratio_scale ? std::exp(baseline_) : baseline_; }
  double limit() const {
    if (!options_.ratio_scale) return limit_;
    const double edge = options_.better == Better::kHigher ? std::exp(baseline_ - limit_)
                                                           : std::exp(baseline_ + limit_);
    return std::fabs(baseline() - edge);
  }

  void observe(const PairResult& r) {
    results_.push_back(r);
    if (!r.value) {
      failed_.insert(r.source);
      failed_.insert(r.destination);
    }
  }

  bool is_low(const PairResult& r) const {
    if (!r.value) return false;
    const double v = scaled(*r.value);
    const double worse = options_.better == Better::kHigher ? baseline_ - v : v - baseline_;
    return worse > limit_;
  }

  bool predicts_low(const Suspect& s, std::size_t x, std::size_t y) const {
    switch (s.kind) {
    case FaultKind::kNode: return x == s.a || y == s.a;
    case FaultKind::kUplink:
      return leaves_[x] != leaves_[y] && (leaves_[x] == s.leaf || leaves_[y] == s.leaf);
    case FaultKind::kPath: return std::minmax(x, y) == std::minmax(s.a, s.b);
    default: return false;
    }
  }

  // The first result that `s` does not explain, or nullptr.
  const PairResult* contradiction(const Suspect& s) const {
    for (const auto& r : results_) {
      if (r.value && predicts_low(s, r.source, r.destination) != is_low(r)) return &r;
    }
    return nullptr;
  }

  std::size_t low_count() const {
    return static_cast<std::size_t>(std::count_if(results_.begin(), results_.end(),
                                                  [&](const PairResult& r) { return is_low(r); }));
  }
  const PairResult* first_low() const {
    for (const auto& r : results_)
      if (is_low(r)) return &r;
    return nullptr;
  }

  // Everything that could explain the first low result.
  std::vector<Suspect> suspects_of(const PairResult& low) const {
    std::vector<Suspect> out;
    out.push_back({FaultKind::kNode, low.source, 0, ""});
    out.push_back({FaultKind::kNode, low.destination, 0, ""});
    if (placed_ && leaves_[low.source] != leaves_[low.destination]) {
      out.push_back({FaultKind::kUplink, 0, 0, leaves_[low.source]});
      out.push_back({FaultKind::kUplink, 0, 0, leaves_[low.destination]});
    }
    out.push_back({FaultKind::kPath, low.source, low.destination, ""});
    return out;
  }

  // A path is only named once measured low twice: once could be noise.
  bool confirmed(const Suspect& s) const {
    if (s.kind != FaultKind::kPath) return true;
    std::size_t lows = 0;
    for (const auto& r : results_)
      if (is_low(r) && predicts_low(s, r.source, r.destination)) ++lows;
    return lows >= 2;
  }

  // One round that tests every suspect left: each against reference hosts that no suspect
  // involves, so that the result speaks for that suspect alone.
  MeshRound follow_up(const std::vector<Suspect>& left, std::size_t number) const {
    std::vector<bool> busy(names_.size());
    std::vector<bool> suspected(names_.size());
    std::vector<std::string> suspected_leaves;
    for (const auto& s : left) {
      if (s.kind == FaultKind::kUplink) {
        suspected_leaves.push_back(s.leaf);
      } else {
        suspected[s.a] = true;
        if (s.kind == FaultKind::kPath) suspected[s.b] = true;
      }
    }
    auto leaf_suspected = [&](const std::string& leaf) {
      return std::find(suspected_leaves.begin(), suspected_leaves.end(), leaf) !=
             suspected_leaves.end();
    };
    auto usable = [&](std::size_t h) { return !busy[h] && !suspected[h] && !failed_.count(h); };
    auto pick_in = [&](const std::vector<std::size_t>& hosts) -> std::optional<std::size_t> {
      // Rotate the start so that a reference that failed is not picked again.
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        std::size_t h = hosts[(i + number) % hosts.size()];
        if (usable(h)) return h;
      }
      return std::nullopt;
    };
    // A host of a leaf other than `not_leaf` whose uplink is not suspected.
    auto pick_elsewhere = [&](const std::string& not_leaf) -> std::optional<std::size_t> {
      for (const auto& [leaf, hosts] : by_leaf_) {
        if (leaf == not_leaf || leaf_suspected(leaf)) continue;
        if (auto h = pick_in(hosts)) return h;
      }
      return std::nullopt;
    };
    MeshRound round;
    auto add = [&](std::size_t x, std::size_t y) {
      busy[x] = busy[y] = true;
      // Alternate directions, so that an ordered test sees both.
      if (number % 2 == 0) std::swap(x, y);
      round.emplace_back(x, y);
    };
    for (const auto& s : left) {
      if (s.kind != FaultKind::kNode || busy[s.a]) continue;
      auto ref = pick_in(by_leaf_.at(leaves_[s.a]));
      if (!ref) ref = pick_elsewhere(leaves_[s.a]);
      if (ref) add(s.a, *ref);
    }
    for (const auto& s : left) {
      if (s.kind != FaultKind::kUplink) continue;
      auto inside = pick_in(by_leaf_.at(s.leaf));
      if (!inside) continue;
      busy[*inside] = true;
      auto outside = pick_elsewhere(s.leaf);
      busy[*inside] = false;
      if (outside) add(*inside, *outside);
    }
    for (const auto& s : left) {
      if (s.kind == FaultKind::kPath && !busy[s.a] && !busy[s.b]) add(s.a, s.b);
    }
    return round;
  }

  std::string describe(const Suspect& s) const {
    switch (s.kind) {
    case FaultKind::kNode: return "node " + names_[s.a];
    case FaultKind::kUplink: return "uplink of leaf " + s.leaf;
    case FaultKind::kPath: return "path " + names_[s.a] + " - " + names_[s.b];
    default: return "?";
    }
  }

  std::string pair_text(const PairResult& r) const {
    return names_[r.source] + " -> " + names_[r.destination];
  }

  FaultVerdict verdict_for(const Suspect& s, const std::vector<Suspect>& initial) const {
    FaultVerdict v;
    v.kind = s.kind;
    v.low_results = low_count();
    if (s.kind == FaultKind::kUplink) {
      v.leaf = s.leaf;
    } else {
      v.hosts.push_back(s.a);
      if (s.kind == FaultKind::kPath) v.hosts.push_back(s.b);
    }
    for (const auto& r : results_) {
      if (v.evidence.size() == kMaxEvidence) break;
      if (is_low(r)) v.evidence.push_back({r, "low"});
    }
    for (const auto& other : initial) {
      if (describe(other) == describe(s)) continue;
      if (const PairResult* r = contradiction(other)) {
        v.evidence.push_back(
            {*r, std::string(is_low(*r) ? "low" : "normal") + ": rules out " + describe(other)});
      }
    }
    return v;
  }

  FaultVerdict unexplained() const {
    FaultVerdict v;
    v.kind = FaultKind::kUnexplained;
    v.low_results = low_count();
    for (const auto& r : results_) {
      if (v.evidence.size() == kMaxEvidence) break;
      if (is_low(r)) v.evidence.push_back({r, "low"});
    }
    return v;
  }

  std::vector<Suspect> left_of(const std::vector<Suspect>& suspects) const {
    std::vector<Suspect> left;
    for (const auto& s : suspects)
      if (!contradiction(s)) left.push_back(s);
    return left;
  }

private:
  const std::vector<std::string>& names_;
  const std::vector<std::string>& leaves_;
  const NarrowingOptions& options_;
  bool placed_;
  std::map<std::string, std::vector<std::size_t>> by_leaf_;
  std::vector<PairResult> results_;
  std::set<std::size_t> failed_;
  // A value as judged: itself, or its logarithm (zero stays finite, far below any result).
  double scaled(double v) const { return options_.ratio_scale ? std::log(std::max(v, 1e-12)) : v; }

  double baseline_ = 0, limit_ = 0; // on the judged scale
};

} // namespace

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
  case FaultKind::kNone: return "none";
  case FaultKind::kNode: return "node";
  case FaultKind::kUplink: return "uplink";
  case FaultKind::kPath: return "path";
  case FaultKind::kAmbiguous: return "ambiguous";
  case FaultKind::kUnexplained: return "unexplained";
  }
  return "?";
}

Result<Narrowing> narrow_down(const std::vector<PairResult>& pattern, std::size_t pattern_rounds,
                              const std::vector<std::string>& names,
                              const std::vector<std::string>& leaves,
                              const NarrowingOptions& options, const RoundRunner& run_round) {
  const std::size_t n = names.size();
  if (leaves.size() != n) {
    return Error(ErrorCode::kInvalidArgument, "narrowing",
                 std::to_string(leaves.size()) + " leaves for " + std::to_string(n) + " hosts");
  }
  if (!(options.threshold > 0) || !std::isfinite(options.threshold) ||
      !(options.min_relative >= 0) || !std::isfinite(options.min_relative) ||
      (options.ratio_scale && !(options.min_relative < 1))) {
    return Error(ErrorCode::kInvalidArgument, "narrowing",
                 "the threshold must be positive and the floor at least 0");
  }
  for (const auto& r : pattern) {
    if (r.source >= n || r.destination >= n || r.source == r.destination ||
        (r.value && !std::isfinite(*r.value))) {
      return Error(ErrorCode::kInvalidArgument, "narrowing",
                   "a result of round " + std::to_string(r.round) + " is not a pair of hosts " +
                       "with a finite value");
    }
  }
  Narrowing out;
  out.pattern_rounds = pattern_rounds;
  Narrower narrower(names, leaves, options);
  narrower.set_baseline(pattern);
  out.baseline = narrower.baseline();
  out.limit = narrower.limit();
  for (const auto& r : pattern)
    narrower.observe(r);

  const PairResult* first = narrower.first_low();
  if (first == nullptr) return out; // kNone
  const std::vector<Suspect> initial = narrower.suspects_of(*first);
  const std::size_t max_rounds =
      options.max_rounds != 0
          ? options.max_rounds
          : 2 * static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(n)))) + 2;

  for (;;) {
    std::vector<Suspect> left = narrower.left_of(initial);
    if (left.empty()) {
      out.verdict = narrower.unexplained();
      return out;
    }
    if (left.size() == 1 && narrower.confirmed(left.front())) {
      out.verdict = narrower.verdict_for(left.front(), initial);
      return out;
    }
    const std::size_t number = pattern_rounds + out.follow_up_rounds + 1;
    MeshRound round = options.follow_up && out.follow_up_rounds < max_rounds
                          ? narrower.follow_up(left, number)
                          : MeshRound{};
    if (round.empty()) {
      out.verdict.kind = FaultKind::kAmbiguous;
      out.verdict.low_results = narrower.low_count();
      for (const auto& s : left)
        out.verdict.candidates.push_back(narrower.describe(s));
      return out;
    }
    auto values = run_round(round, number);
    ++out.follow_up_rounds;
    for (std::size_t i = 0; i < round.size(); ++i) {
      PairResult r{round[i].first, round[i].second, i < values.size() ? values[i] : std::nullopt,
                   number};
      if (r.value && !std::isfinite(*r.value)) r.value.reset();
      out.follow_ups.push_back(r);
      narrower.observe(r);
    }
  }
}

std::string describe_verdict(const FaultVerdict& v, const std::vector<std::string>& names) {
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "#" + std::to_string(i); };
  const std::string lows = " (" + std::to_string(v.low_results) + " low results)";
  switch (v.kind) {
  case FaultKind::kNone: return "no fault: every result within the limit";
  case FaultKind::kNode: return "node " + name(v.hosts.at(0)) + ": slow with every partner" + lows;
  case FaultKind::kUplink:
    return "uplink of leaf " + v.leaf + ": slow between " + v.leaf +
           " and other leaves, normal inside it" + lows;
  case FaultKind::kPath:
    return "path " + name(v.hosts.at(0)) + " - " + name(v.hosts.at(1)) +
           ": slow between these two only" + lows;
  case FaultKind::kAmbiguous: {
    std::string out = "ambiguous: no reference host left to tell apart";
    for (std::size_t i = 0; i < v.candidates.size(); ++i)
      out += (i == 0 ? " " : ", ") + v.candidates[i];
    return out + lows;
  }
  case FaultKind::kUnexplained:
    return "unexplained: no single node, uplink or path explains the low results (two faults, "
           "or noise)" +
           lows;
  }
  return "?";
}

} // namespace fabric::probes
