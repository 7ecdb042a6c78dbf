#include "exporters/accounting_rules.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstdio>

#include "exporters/stable_hash.h"

namespace fabric::exporters {
namespace {

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

// MARK with the class of the packet's source or destination (`side`): reset to external,
// then one lookup in the class map, which sets the class's bits where a network matches.
void classify(Writer& w, const char* chain, const char* side, int family, uint32_t mask) {
  w.rule(chain, "-j MARK --set-xmark " + mark_spec(0, mask));
  w.rule(chain, "-j SET --map-set " + class_map_name(family) + " " + side + " --map-mark");
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
  for (const char* chain : {kTxChain, kRxChain})
    w.chain(chain);
  // The host's own loopback traffic is no pod's, and must not pay for the lookups.
  w.rule(kTxChain, "-i lo -j RETURN");
  w.rule(kRxChain, "-o lo -j RETURN");
  classify(w, kTxChain, "dst", family, mask);
  count_by_set(w, kTxChain, "tx", "src", family, classes.size() + 1, mask);
  classify(w, kRxChain, "src", family, mask);
  count_by_set(w, kRxChain, "rx", "dst", family, classes.size() + 1, mask);
  // The packet leaves with its destination's class.
  classify(w, kRxChain, "dst", family, mask);
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

std::string class_map_name(int family) {
  return kIpsetPrefix + std::string(family == AF_INET ? "class4" : "class6");
}

std::vector<ClassNetwork> class_networks(const std::vector<TrafficClass>& classes, uint32_t mask,
                                         int family) {
  std::vector<Cidr> earlier; // every network of the family seen so far, in configured order
  std::vector<ClassNetwork> out;
  for (std::size_t k = 0; k < classes.size(); ++k) {
    const uint32_t mark = deposit_bits(static_cast<uint32_t>(k + 1), mask);
    for (const auto& configured : classes[k].networks) {
      if (configured.family != family) continue;
      std::vector<Cidr> parts{configured};
      if (configured.prefix == 0) {
        Cidr upper = configured;
        upper.prefix = parts[0].prefix = 1;
        upper.address[0] = 0x80;
        parts.push_back(upper);
      }
      for (const auto& part : parts) {
        // An earlier network that contains this one wins wherever this one would match.
        if (std::none_of(earlier.begin(), earlier.end(),
                         [&](const Cidr& e) { return e.contains(part); }))
          out.push_back({part, mark});
        earlier.push_back(part);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
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
  // The plan's hash, as a comment on the first rule of FABRIC-ACCT-TX (a rule every
  // packet passes anyway): a restart reads it back to adopt what it finds instead of
  // rewriting it.
  for (FamilyRules* rules : {&plan.v4, &plan.v6}) {
    if (rules->restore.empty()) continue;
    const std::string loopback = "-A " + std::string(kTxChain) + " -i lo ";
    const std::size_t at = rules->restore.find(loopback) + loopback.size();
    rules->restore.insert(at, "-m comment --comment \"" + plan_comment(plan.hash) + "\" ");
  }
  for (int family : {AF_INET, AF_INET6}) {
    if ((family == AF_INET ? plan.v4 : plan.v6).restore.empty()) continue;
    for (std::size_t k = 0; k < class_order.size(); ++k) {
      for (const char* direction : {"tx", "rx"})
        plan.sets.push_back({ipset_name(direction, family, k), family, class_order[k], direction});
    }
    plan.class_maps.push_back(
        {class_map_name(family), family, mark_mask, class_networks(classes, mark_mask, family)});
  }
  return plan;
}

} // namespace fabric::exporters
