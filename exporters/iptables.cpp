#include "exporters/iptables.h"

#include <sys/socket.h>

#include <cstdlib>
#include <set>

#include "common/log.h"
#include "common/subprocess.h"
#include "exporters/accounting_rules.h"
#include "exporters/ip_rule_marks.h"

namespace fabric::exporters {
namespace {

constexpr std::chrono::seconds kToolTimeout{60};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Words of a rule as iptables-save quotes them ("--comment \"a b\"" is one word).
std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::string word;
  bool quoted = false;
  bool any = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\' && i + 1 < line.size()) {
        word += line[++i];
      } else if (c == '"') {
        quoted = false;
      } else {
        word += c;
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ' ' || c == '\t') {
      if (any || !word.empty()) out.push_back(std::move(word));
      word.clear();
      any = false;
    } else {
      word += c;
    }
  }
  if (any || !word.empty()) out.push_back(std::move(word));
  return out;
}

uint32_t parse_mark(const std::string& text) {
  return static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 0));
}

// "V/M" -> M; "V" -> every bit.
uint32_t mask_of(const std::string& value) {
  const std::size_t slash = value.find('/');
  return slash == std::string::npos ? 0xffffffffu : parse_mark(value.substr(slash + 1));
}

bool is_ours(const std::string& chain) {
  return chain.starts_with(kChainPrefix);
}

std::string chain_of_rule(const std::vector<std::string>& words) {
  return words.size() >= 2 && words[0] == "-A" ? words[1] : "";
}

Result<SubprocessResult> run_tool(const std::vector<std::string>& argv,
                                  const std::string& input = {}) {
  SubprocessOptions options;
  options.stdin_text = input;
  options.timeout = kToolTimeout;
  return run_subprocess(argv, options);
}

// Targets after which the packet goes on to the chain's next rule.
const std::set<std::string> kTargetsThatContinue = {
    "MARK",  "CONNMARK", "LOG",         "NFLOG",   "TRACE",    "DSCP",   "TOS",
    "TTL",   "HL",       "CLASSIFY",    "CT",      "NOTRACK",  "TCPMSS", "SET",
    "AUDIT", "CHECKSUM", "CONNSECMARK", "SECMARK", "IDLETIMER"};

} // namespace

std::string_view backend_name(Backend backend) {
  return backend == Backend::kLegacy ? "legacy" : "nft";
}

std::string iptables_program(Backend backend, int family, const char* verb) {
  return std::string(family == AF_INET6 ? "ip6tables-" : "iptables-") +
         std::string(backend_name(backend)) + "-" + verb;
}

Result<std::string> iptables_save(Backend backend, int family, const std::string& table) {
  std::vector<std::string> argv{iptables_program(backend, family, "save")};
  if (!table.empty()) argv.insert(argv.end(), {"-t", table});
  FABRIC_ASSIGN_OR_RETURN(auto result, run_tool(argv));
  if (result.exit_status != 0) {
    // x_tables without the table loaded (nothing ever used it): nothing there.
    if (result.stderr_text.find("does not exist") != std::string::npos) return std::string();
    return Error(ErrorCode::kSystem, argv[0], result.stderr_text);
  }
  return std::move(result.stdout_text);
}

Result<void> iptables_restore(Backend backend, int family, const std::string& input) {
  std::vector<std::string> argv{iptables_program(backend, family, "restore"), "--noflush", "-w",
                                "10"};
  FABRIC_ASSIGN_OR_RETURN(auto result, run_tool(argv, input));
  if (result.exit_status != 0) {
    std::string detail = result.stderr_text;
    while (!detail.empty() && detail.back() == '\n')
      detail.pop_back();
    return Error(ErrorCode::kSystem, argv[0] + " --noflush", detail);
  }
  return Ok();
}

Result<Backend> detect_backend() {
  struct Seen {
    Backend backend;
    bool ours = false;
    bool kubelet = false;
    std::size_t rules = 0;
    bool ran = false;
  };
  Seen seen[] = {{Backend::kLegacy}, {Backend::kNft}};
  for (Seen& s : seen) {
    auto text = iptables_save(s.backend, AF_INET);
    if (!text.ok()) {
      spdlog::debug("{}: {}", iptables_program(s.backend, AF_INET, "save"), text.error().message());
      continue;
    }
    s.ran = true;
    for (const auto& line : lines_of(*text)) {
      if (line.starts_with(":" + std::string(kChainPrefix))) s.ours = true;
      if (line.starts_with(":KUBE-IPTABLES-HINT") || line.starts_with(":KUBE-KUBELET-CANARY"))
        s.kubelet = true;
      if (line.starts_with("-A ")) ++s.rules;
    }
  }
  if (!seen[0].ran && !seen[1].ran) {
    return Error(ErrorCode::kNotFound, "detecting the iptables backend",
                 "neither iptables-legacy-save nor iptables-nft-save could run")
        .with_hint("install Debian's iptables package");
  }
  for (auto pick : {&Seen::ours, &Seen::kubelet}) {
    if (seen[1].*pick) return Backend::kNft;
    if (seen[0].*pick) return Backend::kLegacy;
  }
  return seen[0].rules > seen[1].rules ? Backend::kLegacy : Backend::kNft;
}

SavedTable parse_saved_table(const std::string& save_output, const std::string& table) {
  SavedTable out;
  std::set<std::string> chains_with_an_exit; // built-in chains with a rule that may end a walk
  bool in_table = false;
  for (const auto& line : lines_of(save_output)) {
    if (line.starts_with("*")) {
      in_table = line.substr(1) == table;
      continue;
    }
    if (!in_table) continue;
    if (line.starts_with(":")) {
      const std::string chain = line.substr(1, line.find(' ') - 1);
      if (is_ours(chain)) out.our_chains.push_back(chain);
      continue;
    }
    if (!line.starts_with("-A ")) continue;
    const auto words = words_of(line);
    if (is_ours(chain_of_rule(words))) {
      out.our_rules.push_back(line);
      continue;
    }
    bool jumps_to_ours = false;
    bool may_end_walk = false;
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] != "-j" && words[i] != "-g") continue;
      if (is_ours(words[i + 1])) jumps_to_ours = true;
      may_end_walk |= !kTargetsThatContinue.count(words[i + 1]);
    }
    const std::string chain = chain_of_rule(words);
    if (jumps_to_ours) {
      out.jump_rules.push_back(line);
      if (chains_with_an_exit.count(chain)) out.misplaced_jumps.push_back(line);
    } else {
      out.other_rules.push_back(line);
      if (may_end_walk) chains_with_an_exit.insert(chain);
    }
  }
  return out;
}

uint32_t mark_bits_of_rule(const std::string& rule) {
  const auto words = words_of(rule);
  uint32_t bits = 0;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    const std::string& value = words[i + 1];
    if (w == "--mark" || w == "--set-xmark" || w == "--set-mark" || w == "--tproxy-mark") {
      bits |= mask_of(value);
    } else if (w == "--and-mark") {
      bits |= ~parse_mark(value);
    } else if (w == "--or-mark" || w == "--xor-mark" || w == "--nfmask" || w == "--ctmask" ||
               w == "--mask") {
      bits |= parse_mark(value);
    }
  }
  return bits;
}

Result<std::vector<MarkConflict>> find_mark_conflicts(uint32_t mask) {
  std::vector<MarkConflict> out;
  for (Backend backend : {Backend::kLegacy, Backend::kNft}) {
    for (int family : {AF_INET, AF_INET6}) {
      const std::string program = iptables_program(backend, family, "save");
      auto text = iptables_save(backend, family);
      if (!text.ok()) {
        spdlog::debug("mark check: {}: {}", program, text.error().message());
        continue;
      }
      std::string table;
      for (const auto& line : lines_of(*text)) {
        if (line.starts_with("*")) table = line.substr(1);
        if (!line.starts_with("-A ") || is_ours(chain_of_rule(words_of(line)))) continue;
        const uint32_t bits = mark_bits_of_rule(line);
        if (bits & mask) out.push_back({program + " " + table, line, bits});
      }
    }
  }
  for (int family : {AF_INET, AF_INET6}) {
    FABRIC_ASSIGN_OR_RETURN(auto rules, ip_rule_marks(family));
    for (const auto& rule : rules) {
      if (rule.bits & mask) out.push_back({"ip rule", rule.rule, rule.bits});
    }
  }
  return out;
}

} // namespace fabric::exporters
