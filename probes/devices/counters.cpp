#include "probes/devices/counters.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "common/units.h"

namespace fabric::probes {
namespace {

// PMA counters with kernel names that say what they count in our names.
struct Renamed {
  const char* file;
  const char* key;
  uint64_t scale; // port_*_data count 4-byte words
};
constexpr Renamed kPortCounters[] = {
    {"port_xmit_data", "xmit_bytes", 4},
    {"port_rcv_data", "rcv_bytes", 4},
    {"port_xmit_packets", "xmit_packets", 1},
    {"port_rcv_packets", "rcv_packets", 1},
};

// hw_counters/lifespan is a setting (how long, in ms, the driver caches the values), not
// a counter.
constexpr const char* kHwSettings[] = {"lifespan"};

constexpr const char* kGroups[] = {"port", "hw", "eth"};

void add_note(std::vector<std::string>& notes, std::string note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
}

void read_port_counters(const SysfsReader& sysfs, const std::string& port_dir,
                        const std::string& label, CounterSnapshot& snap) {
  const std::string dir = port_dir + "counters";
  auto names = sysfs.list(dir);
  if (!names.ok() || names->empty()) {
    add_note(snap.notes, label + " has no port counters (" + dir +
                             "): no byte or packet counts from the port (soft-RoCE has none)");
    return;
  }
  for (const auto& name : *names) {
    auto value = sysfs.read_u64(dir + "/" + name);
    if (!value.ok()) {
      add_note(snap.notes, "port counter " + name + " unreadable: " + value.error().message());
      continue;
    }
    const Renamed* renamed = nullptr;
    for (const auto& r : kPortCounters) {
      if (name == r.file) renamed = &r;
    }
    if (renamed == nullptr) {
      snap.values["port." + name] = *value;
      continue;
    }
    if (renamed->scale != 1 && *value == std::numeric_limits<uint32_t>::max()) {
      add_note(snap.notes, "port counter " + name +
                               " is saturated at 2^32-1 (legacy 32-bit counter): left out");
      continue;
    }
    snap.values[std::string("port.") + renamed->key] = *value * renamed->scale;
  }
}

void read_hw_counters(const SysfsReader& sysfs, const std::string& port_dir,
                      const std::string& label, CounterSnapshot& snap) {
  const std::string dir = port_dir + "hw_counters";
  auto names = sysfs.list(dir);
  if (!names.ok() || names->empty()) {
    add_note(snap.notes, label + " has no hw_counters (" + dir + ")");
    return;
  }
  for (const auto& name : *names) {
    if (std::find(std::begin(kHwSettings), std::end(kHwSettings), name) != std::end(kHwSettings))
      continue;
    auto value = sysfs.read_u64(dir + "/" + name);
    if (!value.ok()) {
      add_note(snap.notes, "hw counter " + name + " unreadable: " + value.error().message());
      continue;
    }
    snap.values["hw." + name] = *value;
  }
}

Result<void> read_pause_counters(const std::string& netdev, const EthtoolReader& ethtool,
                                 CounterSnapshot& snap) {
  if (netdev.empty()) {
    add_note(snap.notes, "no netdev given: no Ethernet pause counters");
    return Ok();
  }
  auto stats = ethtool(netdev);
  if (!stats.ok()) {
    if (stats.error().code() == ErrorCode::kNotFound ||
        stats.error().code() == ErrorCode::kInvalidArgument) {
      return std::move(stats).error().with_context("reading the pause counters of " + netdev);
    }
    add_note(snap.notes,
             "no Ethernet pause counters for " + netdev + ": " + stats.error().message());
    return Ok();
  }
  std::size_t kept = 0;
  for (const auto& stat : *stats) {
    if (!is_pause_stat(stat.name)) continue;
    snap.values["eth." + stat.name] = stat.value;
    ++kept;
  }
  if (kept == 0) {
    add_note(snap.notes, netdev + "'s ethtool statistics have no pause counters");
  }
  return Ok();
}

// The group ("port") and the name inside it ("xmit_bytes") of a key.
std::pair<std::string, std::string> split_key(const std::string& key) {
  auto dot = key.find('.');
  if (dot == std::string::npos) return {"", key};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

std::string format_rate(uint64_t bytes, double seconds) {
  if (seconds <= 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "  (%.2f Gb/s)",
                units::bytes_per_second_to_gbps(static_cast<double>(bytes) / seconds));
  return buf;
}

} // namespace

Result<CounterSnapshot> read_counters(const SysfsReader& sysfs, const std::string& rdma_device,
                                      uint32_t port, const std::string& netdev,
                                      const EthtoolReader& ethtool) {
  const std::string port_dir =
      "class/infiniband/" + rdma_device + "/ports/" + std::to_string(port) + "/";
  const std::string label = rdma_device + " port " + std::to_string(port);
  if (!sysfs.exists(port_dir)) {
    return Error(ErrorCode::kNotFound, "reading the counters of " + label,
                 "no such RDMA port in " + sysfs.path("class/infiniband"));
  }
  CounterSnapshot snap;
  read_port_counters(sysfs, port_dir, label, snap);
  read_hw_counters(sysfs, port_dir, label, snap);
  FABRIC_TRY(read_pause_counters(netdev, ethtool, snap));
  snap.taken = std::chrono::steady_clock::now();
  return snap;
}

CounterDelta delta(const CounterSnapshot& before, const CounterSnapshot& after) {
  CounterDelta d;
  d.seconds = std::chrono::duration<double>(after.taken - before.taken).count();
  for (const auto& note : before.notes)
    add_note(d.notes, note);
  for (const auto& note : after.notes)
    add_note(d.notes, note);
  for (const auto& [key, end] : after.values) {
    auto it = before.values.find(key);
    if (it == before.values.end()) {
      add_note(d.notes, key + " appeared during the test: left out");
      continue;
    }
    if (end < it->second) {
      add_note(d.notes, key + " went backwards (" + std::to_string(it->second) + " -> " +
                            std::to_string(end) + "; counter reset?): left out");
      continue;
    }
    d.values[key] = end - it->second;
  }
  for (const auto& [key, start] : before.values) {
    if (after.values.count(key) == 0)
      add_note(d.notes, key + " disappeared during the test: left out");
  }
  return d;
}

void write_counters_json(json::Writer& out, const CounterDelta& d) {
  out.begin_object();
  out.field("seconds", d.seconds);
  for (const char* group : kGroups) {
    out.key(group).begin_object();
    for (const auto& [key, value] : d.values) {
      auto [g, name] = split_key(key);
      if (g == group) out.field(name, value);
    }
    out.end_object();
  }
  out.key("notes").begin_array();
  for (const auto& note : d.notes)
    out.value(note);
  out.end_array();
  out.end_object();
}

std::string render_counters_text(const CounterDelta& d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "counters (change over %.2f s):\n", d.seconds);
  std::string out = buf;
  std::size_t width = 0;
  for (const auto& [key, value] : d.values)
    width = std::max(width, split_key(key).second.size());
  for (const char* group : kGroups) {
    const bool always = std::string_view(group) == "port";
    std::size_t unchanged = 0;
    bool first = true;
    for (const auto& [key, value] : d.values) {
      auto [g, name] = split_key(key);
      if (g != group) continue;
      if (!always && value == 0) {
        ++unchanged;
        continue;
      }
      std::string rate = name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0
                             ? format_rate(value, d.seconds)
                             : "";
      std::snprintf(buf, sizeof buf, "  %-4s  %-*s  %20llu%s\n", first ? group : "",
                    static_cast<int>(width), name.c_str(), static_cast<unsigned long long>(value),
                    rate.c_str());
      out += buf;
      first = false;
    }
    if (unchanged > 0) {
      std::snprintf(buf, sizeof buf, "  %-4s  %zu %s at 0\n", first ? group : "", unchanged,
                    first ? "counters, all" : "more");
      out += buf;
    }
  }
  for (const auto& note : d.notes)
    out += "  note: " + note + "\n";
  return out;
}

} // namespace fabric::probes
