// The firewall marks the host's policy-routing rules (`ip rule ... fwmark M/MASK`) match,
// read over routing netlink: the exporter's image has no `ip`, and a mark bit a routing
// rule uses must not be the accounting's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::exporters {

struct IpRuleMark {
  std::string rule;  // for people: "ipv4 rule priority 100 fwmark 0x2000/0x2000 table 100"
  uint32_t bits = 0; // the mask the rule compares under
};

// Every rule of `family` (AF_INET or AF_INET6) in the calling thread's network namespace
// that matches a firewall mark. A family the kernel does not have (no IPv6) gives none.
Result<std::vector<IpRuleMark>> ip_rule_marks(int family);

} // namespace fabric::exporters
