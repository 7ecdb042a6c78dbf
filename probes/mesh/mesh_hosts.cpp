#include "probes/mesh/mesh_hosts.h"

#include <set>
#include <utility>

#include "common/atomic_file.h"
#include "common/strings.h"

namespace fabric::probes {
namespace {

bool names_a_file(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.find(',') == std::string::npos;
}

bool is_place_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == ':';
}

Error hosts_error(std::string_view where, std::size_t line, const std::string& what) {
  return Error(ErrorCode::kInvalidConfig, std::string(where),
               "line " + std::to_string(line) + ": " + what);
}

// Checks the hosts as a set: no endpoint twice, at least two, at most kMaxMeshHosts.
Result<void> check_host_set(const std::vector<MeshHost>& hosts, std::string_view where) {
  std::set<std::pair<std::string, uint16_t>> seen;
  for (const auto& h : hosts) {
    if (!seen.insert({h.agent.host, h.agent.port}).second) {
      return Error(ErrorCode::kInvalidArgument, std::string(where),
                   "'" + h.name + "' is listed twice");
    }
  }
  if (hosts.size() < 2) {
    return Error(ErrorCode::kInvalidArgument, std::string(where),
                 "needs at least two hosts, got " + std::to_string(hosts.size()));
  }
  if (hosts.size() > kMaxMeshHosts) {
    return Error(ErrorCode::kInvalidArgument, std::string(where),
                 "has " + std::to_string(hosts.size()) + " hosts; at most " +
                     std::to_string(kMaxMeshHosts) + " are supported");
  }
  return Ok();
}

// "leaf=l01" into `place`; errors say what is wrong with the word.
Result<void> parse_place_word(std::string_view word, FabricPlace& place,
                              std::set<std::string>& seen) {
  auto eq = word.find('=');
  if (eq == std::string_view::npos) {
    return Error(ErrorCode::kInvalidConfig, "",
                 "'" + std::string(word) + "' is not KEY=NAME (keys: leaf, rail, spine)");
  }
  std::string key(word.substr(0, eq));
  std::string_view value = word.substr(eq + 1);
  std::string* field = key == "leaf"    ? &place.leaf
                       : key == "rail"  ? &place.rail
                       : key == "spine" ? &place.spine
                                        : nullptr;
  if (field == nullptr) {
    return Error(ErrorCode::kInvalidConfig, "",
                 "unknown key '" + key.substr(0, kMaxPlaceName) + "' (keys: leaf, rail, spine)");
  }
  if (!seen.insert(key).second) {
    return Error(ErrorCode::kInvalidConfig, "", "'" + key + "' is given twice");
  }
  if (value.empty() || value.size() > kMaxPlaceName) {
    return Error(ErrorCode::kInvalidConfig, "",
                 key + " must be 1 to " + std::to_string(kMaxPlaceName) + " characters");
  }
  for (char c : value) {
    if (!is_place_char(c)) {
      return Error(ErrorCode::kInvalidConfig, "",
                   key + " may hold letters, digits, '.', '_', '-' and ':' only");
    }
  }
  *field = std::string(value);
  return Ok();
}

} // namespace

Result<std::vector<MeshHost>> parse_mesh_hosts(const std::vector<std::string>& entries,
                                               uint16_t default_port, std::string_view where) {
  std::vector<MeshHost> hosts;
  for (const auto& entry : entries) {
    FABRIC_ASSIGN_OR_RETURN(Endpoint agent,
                            parse_endpoint(entry, default_port, std::string(where)));
    hosts.push_back({entry, agent, {}});
    if (hosts.size() > kMaxMeshHosts) break; // check_host_set says so
  }
  FABRIC_TRY(check_host_set(hosts, where));
  return hosts;
}

Result<std::vector<MeshHost>> parse_mesh_hosts_file(std::string_view text, uint16_t default_port,
                                                    std::string_view where) {
  std::vector<MeshHost> hosts;
  std::size_t line_number = 0, first_with_leaf = 0, first_without_leaf = 0;
  while (!text.empty()) {
    ++line_number;
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? "" : text.substr(end + 1);
    if (line.size() > kMaxMeshHostsLine) {
      return hosts_error(where, line_number,
                         "longer than " + std::to_string(kMaxMeshHostsLine) + " characters");
    }
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (hosts.size() == kMaxMeshHosts) {
      return hosts_error(where, line_number,
                         "more than " + std::to_string(kMaxMeshHosts) + " hosts");
    }
    std::vector<std::string_view> words;
    while (!line.empty()) {
      auto space = line.find_first_of(" \t\r");
      words.push_back(line.substr(0, space));
      line = space == std::string_view::npos ? "" : trim(line.substr(space));
    }
    MeshHost host;
    host.name = std::string(words[0]);
    auto agent = parse_endpoint(words[0], default_port, "host");
    if (!agent.ok()) return hosts_error(where, line_number, agent.error().message());
    host.agent = *agent;
    std::set<std::string> keys;
    for (std::size_t i = 1; i < words.size(); ++i) {
      if (auto word = parse_place_word(words[i], host.place, keys); !word.ok()) {
        return hosts_error(where, line_number, word.error().message());
      }
    }
    std::size_t& first = host.place.leaf.empty() ? first_without_leaf : first_with_leaf;
    if (first == 0) first = line_number;
    if (first_with_leaf != 0 && first_without_leaf != 0) {
      return hosts_error(where, line_number,
                         "line " + std::to_string(first_with_leaf) + " gives a leaf= and line " +
                             std::to_string(first_without_leaf) +
                             " does not: give every host its leaf, or none");
    }
    hosts.push_back(std::move(host));
  }
  FABRIC_TRY(check_host_set(hosts, where));
  return hosts;
}

Result<std::vector<MeshHost>> load_mesh_hosts(const std::string& arg, uint16_t default_port) {
  if (names_a_file(arg)) {
    auto text = read_bounded_file(arg, kMaxMeshHostsFileBytes);
    if (text.ok()) return parse_mesh_hosts_file(*text, default_port, "--hosts " + arg);
    // A single name that is no file is a (too short) list; a path must exist.
    if (arg.find('/') != std::string::npos || text.error().code() != ErrorCode::kNotFound) {
      return std::move(text).error().with_context("--hosts");
    }
  }
  std::vector<std::string> entries;
  std::string_view rest = arg;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string entry{trim(rest.substr(0, comma))};
    if (!entry.empty()) entries.push_back(entry);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return parse_mesh_hosts(entries, default_port, "--hosts");
}

std::vector<std::string> leaves_of(const std::vector<MeshHost>& hosts) {
  std::vector<std::string> out;
  out.reserve(hosts.size());
  for (const auto& h : hosts)
    out.push_back(h.place.leaf);
  return out;
}

} // namespace fabric::probes
