#include "exporters/accounting_rules.h"

#include <sys/socket.h>

#include <cstdio>

#include "exporters/stable_hash.h"

namespace fabric::exporters {
namespace {

constexpr const char* kDstChain = "FABRIC-ACCT-DST";
constexpr const char* kSrcChain = "FABRIC-ACCT-SRC";

class Writer {
public:
  void chain(const std::string& name) {
    declarations_ += ":" + name + " - [0:0]\n";
    rules_per_chain_[name]; // present, also when it stays empty
  }
  void rule(const std::string& chain, const std::string& spec) {
    rules_ += "-A " + chain + " " + spec + "\n";
    ++rules_per_chain_[chain];
  }
  FamilyRules finish() {
    return {"*mangle\n" + declarations_ + rules_ + "COMMIT\n", std::move(rules_per_chain_)};
  }

private:
  std::string declarations_;
  std::string rules_;
  std::map<std::string, std::size_t> rules_per_chain_;
};

// The classifier chain: MARK with the class of the source (-s) or destination (-d).
void classify(Writer& w, const char* chain, const char* side, int family,
              const std::vector<TrafficClass>& classes, uint32_t mask) {
  w.rule(chain, "-j MARK --set-xmark " + mark_spec(0, mask));
  for (std::size_t k = classes.size(); k-- > 0;) {
    for (const auto& network : classes[k].networks) {
      if (network.family != family) continue;
      w.rule(chain, std::string(side) + " " + network.text() + " -j MARK --set-xmark " +
                        mark_spec(deposit_bits(static_cast<uint32_t>(k + 1), mask), mask));
    }
  }
}

// The per-class set matches of one direction: only the rule whose mark matches looks the
// address up.
void count_by_set(Writer& w, const char* chain, const std::string& direction, const char* side,
                  int family, std::size_t classes, uint32_t mask) {
  for (std::size_t k = 0; k < classes; ++k) {
    w.rule(chain, "-m mark --mark " +
                      mark_spec(deposit_bits(static_cast<uint32_t>(k), mask), mask) +
                      " -m set --match-set " + ipset_name(direction, family, k) + " " + side);
  }
}

FamilyRules family_rules(int family, const std::vector<TrafficClass>& classes, uint32_t mask,
                         const std::vector<PodAddresses>& pods) {
  bool any = false;
  for (const auto& pod : pods) {
    for (const auto& a : pod.addresses)
      any |= a.family == family;
  }
  if (!any) return {};
  Writer w;
  for (const char* chain : {kTxChain, kRxChain, kDstChain, kSrcChain})
    w.chain(chain);
  classify(w, kDstChain, "-d", family, classes, mask);
  classify(w, kSrcChain, "-s", family, classes, mask);
  // The host's own loopback traffic is no pod's, and must not pay for the lookups.
  w.rule(kTxChain, "-i lo -j RETURN");
  w.rule(kRxChain, "-o lo -j RETURN");
  w.rule(kTxChain, "-j " + std::string(kDstChain));
  w.rule(kRxChain, "-j " + std::string(kSrcChain));
  count_by_set(w, kTxChain, "tx", "src", family, classes.size() + 1, mask);
  count_by_set(w, kRxChain, "rx", "dst", family, classes.size() + 1, mask);
  w.rule(kRxChain, "-j " + std::string(kDstChain));
  return w.finish();
}

} // namespace

std::string jump_rule_spec(const Jump& jump) {
  return std::string("-m comment --comment \"") + kJumpComment + "\" -j " + jump.target;
}

uint32_t deposit_bits(uint32_t value, uint32_t mask) {
  uint32_t out = 0;
  for (uint32_t bit = 1; mask != 0 && value != 0; bit <<= 1) {
    if (mask & bit) {
      if (value & 1) out |= bit;
      value >>= 1;
      mask &= ~bit;
    }
  }
  return out;
}

std::string mark_spec(uint32_t value, uint32_t mask) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%x/0x%x", value, mask);
  return buf;
}

std::string ipset_name(const std::string& direction, int family, std::size_t class_index) {
  return kIpsetPrefix + direction + (family == AF_INET ? "4-" : "6-") + std::to_string(class_index);
}

std::string plan_comment(const std::string& hash) {
  return "fabric-exporter plan " + hash;
}

std::vector<Cidr> AccountingPlan::members(int family) const {
  std::vector<Cidr> out;
  for (const auto& [address, pod] : pod_of) {
    if (address.family == family) out.push_back(address);
  }
  return out;
}

AccountingPlan plan_accounting(const std::vector<TrafficClass>& classes, uint32_t mark_mask,
                               const std::vector<PodAddresses>& pods) {
  std::vector<std::string> class_order{"external"};
  for (const auto& c : classes)
    class_order.push_back(c.name);
  AccountingPlan plan;
  plan.pods = pods;
  // An address two records claim counts for the first pod (records are sorted by pod).
  for (std::size_t i = 0; i < pods.size(); ++i) {
    for (const auto& address : pods[i].addresses)
      plan.pod_of.emplace(address, i);
  }
  plan.v4 = family_rules(AF_INET, classes, mark_mask, pods);
  plan.v6 = family_rules(AF_INET6, classes, mark_mask, pods);
  plan.hash = hex_hash(plan.v4.restore + plan.v6.restore);
  // The plan's hash, as a rule that only carries a comment, first in FABRIC-ACCT-TX: a
  // restart reads it back to adopt what it finds instead of rewriting it.
  for (FamilyRules* rules : {&plan.v4, &plan.v6}) {
    if (rules->restore.empty()) continue;
    const std::string marker = "-A " + std::string(kTxChain) + " ";
    const std::size_t at = rules->restore.find(marker);
    rules->restore.insert(at,
                          marker + "-m comment --comment \"" + plan_comment(plan.hash) + "\"\n");
    ++rules->rules_per_chain[kTxChain];
  }
  for (int family : {AF_INET, AF_INET6}) {
    if ((family == AF_INET ? plan.v4 : plan.v6).restore.empty()) continue;
    for (std::size_t k = 0; k < class_order.size(); ++k) {
      for (const char* direction : {"tx", "rx"})
        plan.sets.push_back({ipset_name(direction, family, k), family, class_order[k], direction});
    }
  }
  return plan;
}

} // namespace fabric::exporters
