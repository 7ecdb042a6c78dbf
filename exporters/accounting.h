// Per-pod traffic accounting: installs and keeps reconciled the mangle-table rules of
// accounting_rules.h, and serves the nfacct counters they feed.
//
// A reconcile reads the pod records, plans the rules, and compares with what
// iptables-save shows of our chains: when the plan changed or a rule was changed or
// deleted by hand, it creates the nfacct objects the plan needs, rewrites our chains in
// one `iptables-restore --noflush` batch, and deletes objects no rule uses any more.
// Otherwise it changes nothing. A restart finds the plan's hash recorded in FABRIC-ACCT-TX
// and adopts the chains as they are (object names are stable, so counts go on).
//
// Scrapes never run iptables: the collector reads every counter in one nfacct dump.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "exporters/accounting_rules.h"
#include "exporters/collector.h"
#include "exporters/config.h"

namespace fabric::exporters {

class AccountingReconciler {
public:
  // Checks the host (CAP_NET_ADMIN through an nfacct dump, the backend, mark bits already
  // in use) and reconciles once; then, with `loop`, every reconcile_interval on a thread.
  // With `loop`, a failed first pass is no error: the thread retries after 1 s, doubling
  // up to reconcile_interval, and plan() stays null until a pass succeeds.
  static Result<std::shared_ptr<AccountingReconciler>> start(const AccountingConfig& config,
                                                             bool loop = true);
  ~AccountingReconciler();
  AccountingReconciler(const AccountingReconciler&) = delete;

  // Ends the reconcile loop and waits for a pass in progress; plan() still answers. A
  // reload stops the old reconciler before it starts a new one, so two never write rules.
  void stop();
  AccountingReconciler& operator=(const AccountingReconciler&) = delete;

  // One pass; passes never overlap.
  Result<void> reconcile();

  std::shared_ptr<const AccountingPlan> plan() const;
  Backend backend() const { return backend_; }
  struct Counts {
    double applied = 0;   // passes that rewrote rules
    double unchanged = 0; // passes that found everything in place
    double failed = 0;
    // Passes that found a jump into our chains behind a rule that may end the walk of its
    // chain (Calico's jump into cali-PREROUTING, which accepts established packets), and
    // moved it back to the top.
    double jump_position_lost = 0;
  };
  Counts counts() const;

private:
  AccountingReconciler(AccountingConfig config, Backend backend)
      : config_(std::move(config)), backend_(backend) {}
  Result<void> reconcile_family(int family, const AccountingPlan& plan, bool& applied);
  void run();

  AccountingConfig config_;
  Backend backend_;
  std::mutex pass_mutex_;   // one pass at a time
  std::string snapshot_[2]; // our rules as iptables-save showed them after our last pass
  std::string applied_hash_[2];

  mutable std::mutex mutex_; // guards plan_ and counts_
  std::shared_ptr<const AccountingPlan> plan_;
  Counts counts_;

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Removes every chain, jump rule and nfacct object of the accounting, in both backends and
// both address families, and nothing else. Returns what it removed, for people.
Result<std::string> cleanup_accounting();

class AccountingCollector : public Collector {
public:
  // `reconciler` null: accounting could not start (the log said why, once); the collector
  // then reports fabric_accounting_active 0.
  explicit AccountingCollector(std::shared_ptr<AccountingReconciler> reconciler)
      : reconciler_(std::move(reconciler)) {}

  std::string name() const override { return "accounting"; }
  Result<void> collect(MetricSink& sink) override;

private:
  std::shared_ptr<AccountingReconciler> reconciler_;
};

} // namespace fabric::exporters
