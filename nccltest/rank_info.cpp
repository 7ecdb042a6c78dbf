#include "nccltest/rank_info.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/atomic_file.h"
#include "common/json.h"

namespace fabric::nccltest {

std::string short_host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::string host_identity() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string id = name;
  // Two containers with the same host name on different machines differ in boot id.
  if (auto boot = read_file("/proc/sys/kernel/random/boot_id"); boot.ok()) {
    id += "/" + boot->substr(0, boot->find('\n'));
  }
  return id;
}

std::optional<uint64_t> mem_available(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return kib * 1024ull;
  }
  return std::nullopt;
}

void write_rank_info_fields(json::Writer& w, const RankInfo& r) {
  w.field("rank", r.rank).field("host", r.host).field("pid", r.pid);
  w.field("local_rank", r.local_rank).field("device", r.device);
  w.field("pci_bus_id", r.pci_bus_id).field("device_name", r.device_name);
  w.key("nic");
  if (r.nic) {
    w.begin_object().field("name", r.nic->name).field("source", r.nic->source);
    w.field("gbps", r.nic->gbps).end_object();
  } else {
    w.null();
  }
  w.field("topology", r.topology);
}

std::string encode_rank_facts(const RankFacts& f) {
  json::Writer w(false);
  w.begin_object();
  write_rank_info_fields(w, f.info);
  w.field("host_id", f.host_id).field("backend_choice", f.backend_choice);
  w.field("backend_reason", f.backend_reason).field("free_memory", f.free_memory);
  w.end_object();
  return w.str();
}

Result<RankFacts> decode_rank_facts(const std::string& text) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc, json::parse(text, "rank description"));
  if (!doc.IsObject()) return Error(ErrorCode::kDecode, "rank description", "not an object");
  RankFacts f;
  RankInfo& r = f.info;
  auto num = [&](const char* name, auto& out) -> Result<void> {
    FABRIC_ASSIGN_OR_RETURN(auto v, json::get_optional_int(doc, "", name));
    if (!v) return Error(ErrorCode::kDecode, "rank description", std::string(name) + " missing");
    out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    return Ok();
  };
  FABRIC_TRY(num("rank", r.rank));
  FABRIC_TRY(num("pid", r.pid));
  FABRIC_TRY(num("device", r.device));
  FABRIC_ASSIGN_OR_RETURN(r.host, json::get_string(doc, "", "host"));
  FABRIC_ASSIGN_OR_RETURN(r.pci_bus_id, json::get_string(doc, "", "pci_bus_id"));
  FABRIC_ASSIGN_OR_RETURN(r.device_name, json::get_string(doc, "", "device_name"));
  FABRIC_ASSIGN_OR_RETURN(f.host_id, json::get_string(doc, "", "host_id"));
  FABRIC_ASSIGN_OR_RETURN(f.backend_choice, json::get_string(doc, "", "backend_choice"));
  FABRIC_ASSIGN_OR_RETURN(f.backend_reason, json::get_string(doc, "", "backend_reason"));
  if (doc.HasMember("topology") && doc["topology"].IsString())
    r.topology = doc["topology"].GetString();
  if (doc.HasMember("free_memory") && doc["free_memory"].IsUint64()) {
    f.free_memory = doc["free_memory"].GetUint64();
  }
  if (doc.HasMember("nic") && doc["nic"].IsObject()) {
    const auto& n = doc["nic"];
    NicInfo nic;
    FABRIC_ASSIGN_OR_RETURN(nic.name, json::get_string(n, "nic", "name"));
    FABRIC_ASSIGN_OR_RETURN(nic.source, json::get_string(n, "nic", "source"));
    if (!n.HasMember("gbps") || !n["gbps"].IsNumber()) {
      return Error(ErrorCode::kDecode, "rank description", "nic.gbps missing");
    }
    nic.gbps = n["gbps"].GetDouble();
    r.nic = nic;
  }
  return f;
}

std::string encode_process_facts(const std::vector<RankFacts>& facts) {
  std::string out;
  for (const RankFacts& f : facts) {
    std::string line = encode_rank_facts(f); // compact JSON: no line break inside
    while (!line.empty() && line.back() == '\n')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

Result<std::vector<RankFacts>> decode_process_facts(const std::string& text, int per_process) {
  std::vector<RankFacts> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      return Error(ErrorCode::kDecode, "rank description", "a line without its end");
    }
    if (static_cast<int>(out.size()) == per_process) {
      return Error(ErrorCode::kDecode, "rank description",
                   "more than the " + std::to_string(per_process) + " ranks of a process");
    }
    FABRIC_ASSIGN_OR_RETURN(RankFacts f, decode_rank_facts(text.substr(start, end - start)));
    out.push_back(std::move(f));
    start = end + 1;
  }
  if (static_cast<int>(out.size()) != per_process) {
    return Error(ErrorCode::kDecode, "rank description",
                 std::to_string(out.size()) + " ranks from a process instead of " +
                     std::to_string(per_process) + " (every process needs the same -g and -t)");
  }
  return out;
}

int place_ranks(std::vector<RankFacts>& ranks) {
  std::map<std::string, int> seen;
  for (RankFacts& f : ranks)
    f.info.local_rank = seen[f.host_id]++;
  return static_cast<int>(seen.size());
}

std::vector<NodeResources> node_resources(const std::vector<RankFacts>& ranks,
                                          BackendKind backend) {
  std::map<std::string, NodeResources> nodes;
  std::vector<std::string> order;
  for (const RankFacts& f : ranks) {
    auto [it, fresh] = nodes.try_emplace(f.host_id);
    NodeResources& n = it->second;
    if (fresh) {
      order.push_back(f.host_id);
      n.host = f.info.host;
      n.ranks = 0;
    }
    ++n.ranks;
    if (f.free_memory) {
      n.memory_bytes = n.memory_bytes ? std::min(*n.memory_bytes, *f.free_memory) : *f.free_memory;
    }
  }
  std::vector<NodeResources> out;
  for (const std::string& id : order) {
    NodeResources n = nodes[id];
    // Host memory is shared by the node's ranks; a GPU's is its rank's alone.
    if (backend == BackendKind::kMpi && n.memory_bytes) *n.memory_bytes /= n.ranks;
    out.push_back(n);
  }
  return out;
}

} // namespace fabric::nccltest
