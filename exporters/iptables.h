// iptables through its own save and restore programs, for both backends Debian ships:
// iptables-legacy-{save,restore} (x_tables) and iptables-nft-{save,restore} (nf_tables
// with the xtables compatibility layer), and ip6tables likewise. Rules change only through
// `restore --noflush -w`, which applies a whole batch atomically and waits for the xtables
// lock instead of failing; never on the scrape path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "exporters/config.h"

namespace fabric::exporters {

std::string_view backend_name(Backend backend); // "legacy", "nft"

// iptables-legacy-save, ip6tables-nft-restore, ...
std::string iptables_program(Backend backend, int family, const char* verb);

// `save [-t table]` output; kNotFound when the program is missing.
Result<std::string> iptables_save(Backend backend, int family, const std::string& table = "");
// `restore --noflush -w 10` with `input` on stdin.
Result<void> iptables_restore(Backend backend, int family, const std::string& input);

// Which backend this host's rules live in, as kube-proxy's iptables-wrapper decides: the
// one that holds our own chains, else the one with kubelet's canary chains, else the one
// with more rules, nft on a tie (Debian 12's default).
Result<Backend> detect_backend();

// One table's rules as iptables-save prints them, split into ours and the rest.
struct SavedTable {
  std::vector<std::string> our_chains;  // declared chains named FABRIC-ACCT*
  std::vector<std::string> our_rules;   // "-A FABRIC-ACCT... ..." lines
  std::vector<std::string> jump_rules;  // rules elsewhere that jump to our chains
  std::vector<std::string> other_rules; // everything else, "-A CHAIN ..."
  // Jump rules that come after a rule of their chain which can end the packet's walk of
  // it (ACCEPT, DROP, RETURN, REJECT, or a jump into another chain, which may accept:
  // Calico's cali-PREROUTING accepts established packets), so that some packets never
  // reach our chains.
  std::vector<std::string> misplaced_jumps;
};
// The `table` section of iptables-save output.
SavedTable parse_saved_table(const std::string& save_output, const std::string& table);

// The mark bits a rule tests or changes (mark/connmark matches, MARK/CONNMARK targets), or
// 0 when it touches none; a value given without a mask covers all 32 bits.
uint32_t mark_bits_of_rule(const std::string& rule);

struct MarkConflict {
  std::string where; // "iptables-nft mangle", "ip rule"
  std::string rule;
  uint32_t bits;
};
// Rules already on the host, in either backend and either family, and policy routing
// rules (over netlink, exporters/ip_rule_marks.h), that use bits of `mask`; our own chains
// are not counted.
Result<std::vector<MarkConflict>> find_mark_conflicts(uint32_t mask);

} // namespace fabric::exporters
