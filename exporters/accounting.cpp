#include "exporters/accounting.h"

#include <sys/socket.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "common/log.h"
#include "exporters/ipset.h"
#include "exporters/iptables.h"
#include "exporters/nfacct.h"

namespace fabric::exporters {
namespace {

constexpr int kFamilies[] = {AF_INET, AF_INET6};

int family_index(int family) {
  return family == AF_INET ? 0 : 1;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines)
    out += line + "\n";
  return out;
}

// What iptables-save shows of ours: our chains' rules and the jumps into them.
std::string snapshot_of(const SavedTable& saved) {
  return join_lines(saved.our_rules) + join_lines(saved.jump_rules);
}

// Whether `saved` is what `rules` would install, judged by what survives any formatting
// iptables-save applies: the plan's hash comment, each chain's rule count, one jump each.
bool matches_plan(const SavedTable& saved, const FamilyRules& rules, const std::string& hash) {
  const std::string comment = plan_comment(hash);
  if (std::none_of(saved.our_rules.begin(), saved.our_rules.end(),
                   [&](const std::string& r) { return r.find(comment) != std::string::npos; }))
    return false;
  std::map<std::string, std::size_t> counts;
  for (const auto& chain : saved.our_chains)
    counts[chain] = 0;
  for (const auto& rule : saved.our_rules) {
    const std::size_t start = 3; // "-A "
    ++counts[rule.substr(start, rule.find(' ', start) - start)];
  }
  if (counts != rules.rules_per_chain) return false;
  for (const Jump& jump : kJumps) {
    const std::string line = "-A " + std::string(jump.chain) + " " + jump_rule_spec(jump);
    if (std::count(saved.jump_rules.begin(), saved.jump_rules.end(), line) != 1) return false;
  }
  return saved.jump_rules.size() == std::size(kJumps);
}

// Lines that remove the jumps in `saved` and every chain of ours not in `keep`.
std::string removals(const SavedTable& saved, const std::map<std::string, std::size_t>& keep) {
  std::string out;
  for (const auto& jump : saved.jump_rules)
    out += "-D" + jump.substr(2) + "\n";
  for (const auto& chain : saved.our_chains) {
    if (!keep.count(chain)) out += "-X " + chain + "\n";
  }
  return out;
}

// Declarations that empty the chains of ours not in `keep`, so they can be deleted.
std::string flushes(const SavedTable& saved, const std::map<std::string, std::size_t>& keep) {
  std::string out;
  for (const auto& chain : saved.our_chains) {
    if (!keep.count(chain)) out += ":" + chain + " - [0:0]\n";
  }
  return out;
}

Result<SavedTable> save_mangle(Backend backend, int family) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, iptables_save(backend, family, "mangle"));
  return parse_saved_table(text, "mangle");
}

// Makes the plan's sets hold exactly the pods' addresses: elements already there keep
// their counts. Returns whether anything changed.
Result<bool> sync_sets(IpsetSocket& ipset, const AccountingPlan& plan) {
  bool changed = false;
  for (const AccountingSet& set : plan.sets) {
    FABRIC_TRY(ipset.create(set.name, set.family));
    FABRIC_ASSIGN_OR_RETURN(auto elements, ipset.list(set.name));
    std::vector<Cidr> have;
    for (const auto& element : elements)
      have.push_back(element.address);
    std::sort(have.begin(), have.end());
    const std::vector<Cidr> want = plan.members(set.family);
    std::vector<Cidr> missing, extra;
    std::set_difference(want.begin(), want.end(), have.begin(), have.end(),
                        std::back_inserter(missing));
    std::set_difference(have.begin(), have.end(), want.begin(), want.end(),
                        std::back_inserter(extra));
    FABRIC_TRY(ipset.add(set.name, missing));
    FABRIC_TRY(ipset.remove(set.name, extra));
    changed |= !missing.empty() || !extra.empty();
  }
  return changed;
}

// Makes each class map hold exactly the plan's networks with their classes' marks: a
// network whose mark changed takes the new one in place (an add overwrites it).
Result<void> sync_class_maps(IpsetSocket& ipset, const AccountingPlan& plan) {
  for (const ClassMap& map : plan.class_maps) {
    FABRIC_TRY(ipset.create_mark_map(map.name, map.family));
    FABRIC_ASSIGN_OR_RETURN(auto elements, ipset.list(map.name));
    std::vector<ClassNetwork> have;
    for (const auto& element : elements)
      have.push_back({element.address, element.skbmask == map.mask ? element.skbmark : ~0u});
    std::sort(have.begin(), have.end());
    std::vector<ClassNetwork> missing;
    std::set_difference(map.networks.begin(), map.networks.end(), have.begin(), have.end(),
                        std::back_inserter(missing));
    std::vector<IpsetElement> additions;
    for (const auto& network : missing)
      additions.push_back(
          {.address = network.network, .skbmark = network.mark, .skbmask = map.mask});
    FABRIC_TRY(ipset.add_marked(map.name, additions));
    std::vector<Cidr> extra;
    for (const auto& network : have) {
      if (std::none_of(map.networks.begin(), map.networks.end(),
                       [&](const ClassNetwork& n) { return n.network == network.network; }))
        extra.push_back(network.network);
    }
    FABRIC_TRY(ipset.remove(map.name, extra));
  }
  return Ok();
}

// Destroys our sets that the plan (null: none) does not name. A set a rule still uses
// stays until the next pass.
Result<std::size_t> destroy_other_sets(IpsetSocket& ipset, const AccountingPlan* plan) {
  FABRIC_ASSIGN_OR_RETURN(auto existing, ipset.names(kIpsetPrefix));
  std::size_t destroyed = 0;
  for (const auto& name : existing) {
    if (plan != nullptr && (std::any_of(plan->sets.begin(), plan->sets.end(),
                                        [&](const AccountingSet& s) { return s.name == name; }) ||
                            std::any_of(plan->class_maps.begin(), plan->class_maps.end(),
                                        [&](const ClassMap& m) { return m.name == name; })))
      continue;
    auto gone = ipset.destroy(name);
    if (!gone.ok()) {
      if (gone.error().code() != ErrorCode::kTryAgain) return std::move(gone).error();
      spdlog::warn("accounting: {}", gone.error().message());
      continue;
    }
    ++destroyed;
  }
  return destroyed;
}

// The per-pod nfacct objects of versions before the ip sets. A kernel without
// nfnetlink_acct has none.
Result<std::size_t> remove_legacy_nfacct() {
  auto nfacct = NfacctSocket::open();
  if (!nfacct.ok()) return std::size_t{0};
  auto objects = nfacct->dump(kNfacctPrefix);
  if (!objects.ok()) {
    if (objects.error().code() == ErrorCode::kUnsupported) return std::size_t{0};
    return std::move(objects).error();
  }
  for (const auto& object : *objects)
    FABRIC_TRY(nfacct->remove(object.name));
  return objects->size();
}

} // namespace

Result<std::shared_ptr<AccountingReconciler>>
AccountingReconciler::start(const AccountingConfig& config, bool loop) {
  {
    FABRIC_ASSIGN_OR_RETURN(IpsetSocket probe, IpsetSocket::open());
    auto listed = probe.names(kIpsetPrefix);
    if (!listed.ok()) return std::move(listed).error().with_context("checking ip_set access");
  }
  Backend backend = config.backend;
  if (backend == Backend::kAuto) {
    FABRIC_ASSIGN_OR_RETURN(backend, detect_backend());
  }
  if (config.check_mark_conflicts) {
    FABRIC_ASSIGN_OR_RETURN(auto conflicts, find_mark_conflicts(config.mark_mask));
    if (!conflicts.empty()) {
      char bits[16];
      std::snprintf(bits, sizeof bits, "0x%x", conflicts.front().bits & config.mark_mask);
      return Error(ErrorCode::kInvalidConfig,
                   "checking mark mask " + mark_spec(0, config.mark_mask).substr(4),
                   std::to_string(conflicts.size()) + " rule(s) on this host use its bits; " +
                       conflicts.front().where + ": '" + conflicts.front().rule + "' uses " + bits)
          .with_hint("choose another accounting.mark_mask (exporters/README.md lists the bits "
                     "kube-proxy, Calico and Cilium use), or set check_mark_conflicts: false");
    }
  }
  std::shared_ptr<AccountingReconciler> reconciler(new AccountingReconciler(config, backend));
  spdlog::info("accounting: iptables backend {}, mark mask {}", backend_name(backend),
               mark_spec(0, config.mark_mask).substr(4));
  auto first = reconciler->reconcile();
  if (!first.ok()) {
    if (!loop) return std::move(first).error();
    // A pass can fail for a while at boot (the xtables lock held past its wait, a state
    // directory not mounted yet): the loop tries again sooner, and accounting reports
    // fabric_accounting_active 0 until a pass succeeds.
    spdlog::warn("accounting: first pass failed, retrying: {}", first.error().message());
  }
  if (loop) reconciler->thread_ = std::thread([r = reconciler.get()] { r->run(); });
  return reconciler;
}

AccountingReconciler::~AccountingReconciler() {
  stop();
}

void AccountingReconciler::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AccountingReconciler::run() {
  using std::chrono::milliseconds;
  const auto interval = std::chrono::duration_cast<milliseconds>(config_.reconcile_interval);
  // Until the first pass succeeds: 1 s, doubling, at most reconcile_interval.
  milliseconds retry = std::min(milliseconds(1000), interval);
  std::unique_lock lock(stop_mutex_);
  for (;;) {
    const bool started = plan() != nullptr;
    if (stop_cv_.wait_for(lock, started ? interval : retry, [&] { return stop_; })) return;
    lock.unlock();
    auto result = reconcile();
    if (!result.ok()) spdlog::error("accounting: {}", result.error().message());
    if (!started) retry = std::min(retry * 2, interval);
    lock.lock();
  }
}

std::shared_ptr<const AccountingPlan> AccountingReconciler::plan() const {
  std::lock_guard lock(mutex_);
  return plan_;
}

AccountingReconciler::Counts AccountingReconciler::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

Result<void> AccountingReconciler::reconcile_family(int family, const AccountingPlan& plan,
                                                    bool& applied) {
  const FamilyRules& rules = family == AF_INET ? plan.v4 : plan.v6;
  const int i = family_index(family);
  FABRIC_ASSIGN_OR_RETURN(SavedTable saved, save_mangle(backend_, family));
  if (rules.restore.empty() && saved.our_chains.empty() && saved.jump_rules.empty()) return Ok();
  const std::string current = snapshot_of(saved);
  // A jump behind a rule that may accept the packet first counts only some packets: it
  // goes back to the top of its chain (rewriting our rules costs no counts: they live in
  // the sets).
  const bool misplaced = !saved.misplaced_jumps.empty();
  if (misplaced) {
    spdlog::warn("accounting: {} behind a rule that may accept packets before it; moving it "
                 "back to the top",
                 saved.misplaced_jumps.front());
    std::lock_guard lock(mutex_);
    ++counts_.jump_position_lost;
  }
  const bool unchanged = !misplaced && applied_hash_[i] == plan.hash && snapshot_[i] == current;
  // A restart (nothing applied yet) adopts rules that carry this plan's hash.
  const bool adoptable =
      !misplaced && applied_hash_[i].empty() && matches_plan(saved, rules, plan.hash);
  if (unchanged || adoptable) {
    snapshot_[i] = current;
    applied_hash_[i] = plan.hash;
    return Ok();
  }
  std::string input;
  if (rules.restore.empty()) {
    // No pod has an address of this family any more: remove what we had.
    input = "*mangle\n" + flushes(saved, {}) + removals(saved, {}) + "COMMIT\n";
  } else {
    std::string jumps;
    for (const Jump& jump : kJumps)
      jumps += "-I " + std::string(jump.chain) + " 1 " + jump_rule_spec(jump) + "\n";
    input = rules.restore;
    input.insert(input.find("-A "), flushes(saved, rules.rules_per_chain));
    input.insert(input.rfind("COMMIT\n"), removals(saved, rules.rules_per_chain) + jumps);
  }
  FABRIC_TRY(iptables_restore(backend_, family, input));
  FABRIC_ASSIGN_OR_RETURN(SavedTable after, save_mangle(backend_, family));
  snapshot_[i] = snapshot_of(after);
  applied_hash_[i] = rules.restore.empty() ? "" : plan.hash;
  applied = true;
  return Ok();
}

Result<void> AccountingReconciler::reconcile() {
  std::lock_guard pass(pass_mutex_);
  auto result = [&]() -> Result<bool> {
    FABRIC_ASSIGN_OR_RETURN(PodRecords records,
                            read_pod_records(config_.cni_state_dir, config_.pod_records_dir));
    for (const auto& skipped : records.skipped)
      spdlog::debug("accounting: pod record skipped: {}", skipped);
    if (records.pods.size() > config_.max_pods) {
      spdlog::warn("accounting: {} pods, more than max_pods {}; the rest are not counted",
                   records.pods.size(), config_.max_pods);
      records.pods.resize(config_.max_pods);
    }
    auto plan = std::make_shared<AccountingPlan>(
        plan_accounting(config_.classes, config_.mark_mask, records.pods));
    FABRIC_ASSIGN_OR_RETURN(IpsetSocket ipset, IpsetSocket::open());
    // Sets first: a rule cannot name a set that does not exist.
    FABRIC_ASSIGN_OR_RETURN(bool members_changed, sync_sets(ipset, *plan));
    FABRIC_TRY(sync_class_maps(ipset, *plan));
    if (members_changed)
      spdlog::debug("accounting: set members updated for {} pod(s)", plan->pods.size());
    bool applied = false;
    for (int family : kFamilies)
      FABRIC_TRY(reconcile_family(family, *plan, applied)
                     .context(std::string("reconciling ") +
                              iptables_program(backend_, family, "restore")));
    // Then sets no rule uses any more (a family without pods, a class removed), and the
    // objects an earlier version counted with.
    auto destroyed = destroy_other_sets(ipset, plan.get());
    if (!destroyed.ok()) return std::move(destroyed).error();
    if (applied) {
      auto legacy = remove_legacy_nfacct();
      if (!legacy.ok()) spdlog::warn("accounting: {}", legacy.error().message());
    }
    std::lock_guard lock(mutex_);
    plan_ = std::move(plan);
    return applied;
  }();
  std::lock_guard lock(mutex_);
  if (!result.ok()) {
    ++counts_.failed;
    return std::move(result).error();
  }
  if (*result) {
    ++counts_.applied;
    spdlog::info("accounting: rules for {} pod(s) applied", plan_->pods.size());
  } else {
    ++counts_.unchanged;
  }
  return Ok();
}

Result<std::string> cleanup_accounting() {
  std::string report;
  for (Backend backend : {Backend::kLegacy, Backend::kNft}) {
    for (int family : kFamilies) {
      auto saved = save_mangle(backend, family);
      if (!saved.ok()) {
        if (saved.error().code() == ErrorCode::kNotFound) continue; // no such program
        return std::move(saved).error();
      }
      if (saved->our_chains.empty() && saved->jump_rules.empty()) continue;
      FABRIC_TRY(iptables_restore(
          backend, family, "*mangle\n" + flushes(*saved, {}) + removals(*saved, {}) + "COMMIT\n"));
      report += iptables_program(backend, family, "restore") + ": removed " +
                std::to_string(saved->our_chains.size()) + " chain(s) and " +
                std::to_string(saved->jump_rules.size()) + " jump rule(s)\n";
    }
  }
  FABRIC_ASSIGN_OR_RETURN(IpsetSocket ipset, IpsetSocket::open());
  FABRIC_ASSIGN_OR_RETURN(std::size_t sets, destroy_other_sets(ipset, nullptr));
  report += "ipset: removed " + std::to_string(sets) + " set(s)\n";
  FABRIC_ASSIGN_OR_RETURN(std::size_t objects, remove_legacy_nfacct());
  report += "nfacct: removed " + std::to_string(objects) + " object(s)\n";
  return report;
}

Result<void> AccountingCollector::collect(MetricSink& sink) {
  auto active = sink.gauge("fabric_accounting_active",
                           "1 when per-pod accounting rules are installed and their counters "
                           "read; 0 when accounting could not start (see the log).");
  auto plan = reconciler_ ? reconciler_->plan() : nullptr;
  if (!plan) {
    active.add({}, 0);
    return Ok();
  }
  FABRIC_ASSIGN_OR_RETURN(IpsetSocket ipset, IpsetSocket::open());
  active.add({}, 1);
  sink.gauge("fabric_accounting_backend_info",
             "The iptables backend the accounting rules are in (legacy or nft; value 1).")
      .add({{"backend", std::string(backend_name(reconciler_->backend()))}}, 1);
  sink.gauge("fabric_accounting_pods", "Pods whose traffic is accounted.")
      .add({}, static_cast<double>(plan->pods.size()));
  const auto counts = reconciler_->counts();
  auto reconciles = sink.counter("fabric_accounting_reconciles_total",
                                 "Reconcile passes by result: applied (rules rewritten), "
                                 "unchanged, failed.");
  reconciles.add({{"result", "applied"}}, counts.applied);
  reconciles.add({{"result", "unchanged"}}, counts.unchanged);
  reconciles.add({{"result", "failed"}}, counts.failed);
  sink.counter("fabric_accounting_jump_position_lost_total",
               "Times a jump into the accounting's chains was found behind a rule that may "
               "accept packets before it (another component's chain inserted above it), and "
               "moved back to the top.")
      .add({}, counts.jump_position_lost);

  // totals[pod][class and direction]: a pod's addresses summed, IPv4 and IPv6 together.
  struct Total {
    uint64_t packets = 0, bytes = 0;
    bool seen = false;
  };
  std::vector<std::string> columns; // "class\0direction", in plan order
  std::map<std::string, std::size_t> column_of;
  for (const AccountingSet& set : plan->sets) {
    const std::string key = set.traffic_class + '\0' + set.direction;
    if (column_of.emplace(key, columns.size()).second) columns.push_back(key);
  }
  std::vector<std::vector<Total>> totals(plan->pods.size(), std::vector<Total>(columns.size()));
  std::size_t missing = 0;
  for (const AccountingSet& set : plan->sets) {
    auto elements = ipset.list(set.name);
    if (!elements.ok()) {
      ++missing; // destroyed by hand; the next reconcile makes it again
      continue;
    }
    const std::size_t column = column_of.at(set.traffic_class + '\0' + set.direction);
    for (const auto& element : *elements) {
      auto pod = plan->pod_of.find(element.address);
      if (pod == plan->pod_of.end()) continue; // added by hand, or a pod gone since
      Total& total = totals[pod->second][column];
      total.packets += element.packets;
      total.bytes += element.bytes;
      total.seen = true;
    }
  }
  auto bytes = sink.counter("fabric_pod_traffic_bytes_total",
                            "Bytes (IP packet lengths) a pod sent (tx) or received (rx), by the "
                            "traffic class of the other end.");
  auto packets = sink.counter("fabric_pod_traffic_packets_total",
                              "Packets a pod sent (tx) or received (rx), by the traffic class of "
                              "the other end.");
  bytes.reserve(totals.size() * columns.size());
  packets.reserve(totals.size() * columns.size());
  for (std::size_t p = 0; p < totals.size(); ++p) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (!totals[p][c].seen) continue;
      // Both series of a counter or neither, so a budget cut never leaves bytes without
      // packets.
      if (sink.room() < 2) {
        sink.count_dropped(2);
        continue;
      }
      const std::string& column = columns[c];
      const std::size_t nul = column.find('\0');
      Labels labels{{"namespace", plan->pods[p].pod_namespace},
                    {"pod", plan->pods[p].pod_name},
                    {"class", column.substr(0, nul)},
                    {"direction", column.substr(nul + 1)}};
      bytes.add(labels, static_cast<double>(totals[p][c].bytes));
      packets.add(std::move(labels), static_cast<double>(totals[p][c].packets));
    }
  }
  if (missing > 0) sink.error(std::to_string(missing) + " ip set(s) of the plan are missing");
  return Ok();
}

} // namespace fabric::exporters
