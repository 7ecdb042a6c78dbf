// The iptables rules of per-pod accounting, generated from the traffic classes and the
// pods' addresses (pure: no iptables here; iptables.h applies them).
//
// In the mangle table, for each address family that has pod addresses:
//
//   PREROUTING  -> FABRIC-ACCT-TX: (loopback returns at once) mark the packet with its
//                  destination's class, then
//                  for each pod address -s ADDR -> the pod's FABRIC-ACCT-P<id>-T chain
//   POSTROUTING -> FABRIC-ACCT-RX: (loopback returns) mark with the source's class, for each
//                  pod address
//                  -d ADDR -> FABRIC-ACCT-P<id>-R, then mark with the destination's class
//   FABRIC-ACCT-P<id>-T/-R: one rule per class, -m mark --mark CLASS/MASK -m nfacct
//
// Every packet a pod sends enters the host through PREROUTING (before kube-proxy's DNAT,
// so a Service address is still the destination), every packet it receives leaves through
// POSTROUTING; each is counted once per pod and direction. The class lives in the mark
// bits of the mask only (MARK --set-xmark VALUE/MASK): class k of the configuration is
// value k spread over the mask's bits, "external" (no class matched) is 0. The packet
// leaves with its destination's class in those bits. Classes are matched in the order
// configured (the first that contains the address wins: the rules are written in reverse,
// so the first class's MARK runs last).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporters/config.h"
#include "exporters/pod_records.h"

namespace fabric::exporters {

inline constexpr const char* kChainPrefix = "FABRIC-ACCT";
inline constexpr const char* kTxChain = "FABRIC-ACCT-TX";
inline constexpr const char* kRxChain = "FABRIC-ACCT-RX";
inline constexpr const char* kNfacctPrefix = "fabric_acct_";
inline constexpr const char* kJumpComment = "fabric-exporter per-pod accounting";

// A rule in a built-in chain that sends packets to ours.
struct Jump {
  const char* chain;  // PREROUTING, POSTROUTING
  const char* target; // FABRIC-ACCT-TX, FABRIC-ACCT-RX
};
inline constexpr Jump kJumps[] = {{"PREROUTING", kTxChain}, {"POSTROUTING", kRxChain}};
// The rule without "-A CHAIN": -m comment --comment "..." -j TARGET.
std::string jump_rule_spec(const Jump& jump);

// What one nfacct object counts.
struct AccountingCounter {
  std::string pod_namespace;
  std::string pod_name;
  std::string traffic_class;
  std::string direction; // "tx" (sent by the pod) or "rx"
};

struct FamilyRules {
  // iptables-restore --noflush input that declares (and so empties) our chains and fills
  // them; empty when no pod has an address of this family.
  std::string restore;
  // How many rules each of our chains gets, to check what iptables-save shows.
  std::map<std::string, std::size_t> rules_per_chain;
};

struct AccountingPlan {
  AccountingPlan() = default;
  AccountingPlan(AccountingPlan&&) = default; // moves keep `index` valid; copies would not
  AccountingPlan& operator=(AccountingPlan&&) = default;
  AccountingPlan(const AccountingPlan&) = delete;

  FamilyRules v4;
  FamilyRules v6;
  // nfacct object name -> what it counts, in pod order (namespace, name), then class, tx
  // before rx.
  std::vector<std::pair<std::string, AccountingCounter>> counters;
  // Object name -> its position in `counters`, so a scrape matches a dump without building
  // a map of its own. The keys view the names in `counters`: the plan is not copied.
  std::unordered_map<std::string_view, std::size_t> index;
  std::size_t pods = 0;
  std::string hash; // of both rule sets; recorded in FABRIC-ACCT-TX as a comment
};

AccountingPlan plan_accounting(const std::vector<TrafficClass>& classes, uint32_t mark_mask,
                               const std::vector<PodAddresses>& pods);

// `value`'s low bits placed into the set bits of `mask`, lowest first (x86 PDEP).
uint32_t deposit_bits(uint32_t value, uint32_t mask);
// "0x1000/0x3000"
std::string mark_spec(uint32_t value, uint32_t mask);
// fabric_acct_<16 hex>: stable for a pod, class and direction, so a restart finds it.
std::string nfacct_name(const std::string& pod_namespace, const std::string& pod_name,
                        const std::string& traffic_class, const std::string& direction);
// FABRIC-ACCT-P<10 hex>-T or -R.
std::string pod_chain(const std::string& pod_namespace, const std::string& pod_name,
                      char direction);
// The comment rule's text in FABRIC-ACCT-TX that records the plan.
std::string plan_comment(const std::string& hash);

} // namespace fabric::exporters
