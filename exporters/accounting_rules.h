// The iptables rules and ip sets of per-pod accounting, generated from the traffic classes
// and the pods' addresses (pure: no iptables here; iptables.h and ipset.h apply them).
//
// In the mangle table, for each address family that has pod addresses:
//
//   PREROUTING  -> FABRIC-ACCT-TX: loopback returns; mark the packet with its destination's
//                  class in one lookup: -j SET --map-set fabric-acct-class4 dst --map-mark;
//                  then one mark test per class, of which the one that matches looks the
//                  source up: -m mark --mark CLASS/MASK -m set --match-set fabric-acct-tx4-CLASS
//                  src
//   POSTROUTING -> FABRIC-ACCT-RX: loopback returns; mark with the source's class, one mark
//                  test per class with the set of that class and direction matched on dst,
//                  then mark with the destination's class
//
// The class map (fabric-acct-class4/6) is a hash:net set whose elements carry the class's
// mark (the skbinfo extension): classifying a packet is one set lookup however many
// networks the classes name, and a change of networks changes elements, not rules. Each
// counted set is a hash:ip set with counters holding every pod address of the family: the
// packet's pod is found in one hash lookup whatever the number of pods, and the kernel
// counts the packet on the element (the pod's address) that matched. The rules depend
// only on the number of classes, the mask and the families: a pod that comes or goes
// changes set elements, not rules. (One counted set keyed by address and mark, hash:ip,mark,
// would spare the mark tests, but not every kernel is built with it.)
//
// Every packet a pod sends enters the host through PREROUTING (before kube-proxy's DNAT,
// so a Service address is still the destination), every packet it receives leaves through
// POSTROUTING; each is counted once per pod and direction. The class lives in the mark
// bits of the mask only (MARK --set-xmark VALUE/MASK): class k of the configuration is
// value k spread over the mask's bits, "external" (no class matched) is 0. The packet
// leaves with its destination's class in those bits. Classes are matched in the order
// configured (the first that contains the address wins). A hash:net set answers with the
// most specific prefix that contains the address, so the class map leaves out every
// network inside one of an earlier class: two prefixes either nest or are disjoint, so
// what remains resolves as configured order does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/config.h"
#include "exporters/pod_records.h"

namespace fabric::exporters {

inline constexpr const char* kChainPrefix = "FABRIC-ACCT";
inline constexpr const char* kTxChain = "FABRIC-ACCT-TX";
inline constexpr const char* kRxChain = "FABRIC-ACCT-RX";
// The nfacct objects of earlier versions (one per pod, class and direction), removed on
// upgrade and by --cleanup.
inline constexpr const char* kNfacctPrefix = "fabric_acct_";
inline constexpr const char* kIpsetPrefix = "fabric-acct-";
inline constexpr const char* kJumpComment = "fabric-exporter per-pod accounting";

// A rule in a built-in chain that sends packets to ours.
struct Jump {
  const char* chain;  // PREROUTING, POSTROUTING
  const char* target; // FABRIC-ACCT-TX, FABRIC-ACCT-RX
};
inline constexpr Jump kJumps[] = {{"PREROUTING", kTxChain}, {"POSTROUTING", kRxChain}};
// The rule without "-A CHAIN": -m comment --comment "..." -j TARGET.
std::string jump_rule_spec(const Jump& jump);

struct FamilyRules {
  // iptables-restore --noflush input that declares (and so empties) our chains and fills
  // them; empty when no pod has an address of this family.
  std::string restore;
  // How many rules each of our chains gets, to check what iptables-save shows.
  std::map<std::string, std::size_t> rules_per_chain;
};

// One ip set the rules match: the pods' addresses of `family`, counted for one class and
// direction.
struct AccountingSet {
  std::string name;
  int family = 0;
  std::string traffic_class;
  std::string direction; // "tx" (sent by the pod) or "rx"
};

// The class map of one family: networks and the mark of their class.
struct ClassNetwork {
  Cidr network;
  uint32_t mark = 0; // the class's value spread over the mask
  bool operator==(const ClassNetwork&) const = default;
  auto operator<=>(const ClassNetwork&) const = default;
};
struct ClassMap {
  std::string name;
  int family = 0;
  uint32_t mask = 0;
  std::vector<ClassNetwork> networks; // sorted
};

struct AccountingPlan {
  FamilyRules v4;
  FamilyRules v6;
  // Every set of the families that have pods, family by family, then class, tx before rx.
  std::vector<AccountingSet> sets;
  // The class maps of the families that have pods.
  std::vector<ClassMap> class_maps;
  std::vector<PodAddresses> pods;
  // Address -> its pod's index in `pods`; each set holds exactly these addresses of its
  // family.
  std::map<Cidr, std::size_t> pod_of;
  std::string hash; // of both rule sets; recorded in FABRIC-ACCT-TX as a comment
  // The set members of `family`, sorted.
  std::vector<Cidr> members(int family) const;
};

AccountingPlan plan_accounting(const std::vector<TrafficClass>& classes, uint32_t mark_mask,
                               const std::vector<PodAddresses>& pods);

// `value`'s low bits placed into the set bits of `mask`, lowest first (x86 PDEP).
uint32_t deposit_bits(uint32_t value, uint32_t mask);
// "0x1000/0x3000"
std::string mark_spec(uint32_t value, uint32_t mask);
// The class map's elements for `family`: each network with its class's mark, those inside a
// network of an earlier class (or an earlier one of the same class) left out, /0 split in
// two halves (a hash:net set holds no /0).
std::vector<ClassNetwork> class_networks(const std::vector<TrafficClass>& classes, uint32_t mask,
                                         int family);
// fabric-acct-class4
std::string class_map_name(int family);
// fabric-acct-tx4-1: direction, family and class index; at most 31 characters.
std::string ipset_name(const std::string& direction, int family, std::size_t class_index);
// The comment rule's text in FABRIC-ACCT-TX that records the plan.
std::string plan_comment(const std::string& hash);

} // namespace fabric::exporters
