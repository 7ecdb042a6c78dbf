// A declarative RoCE QoS profile: what `fabric-pfc plan|apply|verify --profile FILE`
// compares a device against. Every field is optional: the profile owns only what it
// names, and anything it does not name is left as the device has it.
#pragma once

#include <cstddef>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"

namespace fabric::pfc {

struct DesiredConfig {
  // PFC: the exact set of lossless priorities (bit p = priority p), and the delay.
  std::optional<uint8_t> pfc_en;
  std::optional<uint16_t> pfc_delay;

  // ETS.
  std::optional<bool> ets_willing;
  std::optional<PerPriority<uint8_t>> prio_tc;
  std::optional<PerTc<uint8_t>> tc_bw;  // percent; ETS classes sum to 100
  std::optional<PerTc<uint8_t>> tc_tsa; // Tsa values

  // APP table: entries that must be present. With apps_exclusive, entries of the same
  // selectors that the profile does not list are removed (so "dscp 26 -> 3" cannot
  // coexist with a stale "dscp 26 -> 0").
  std::vector<AppEntry> apps;
  bool apps_exclusive = true;

  // Buffers and rate limits.
  std::optional<PerPriority<uint8_t>> prio2buffer;
  std::optional<std::array<uint32_t, 8>> buffer_size;
  std::optional<PerTc<uint64_t>> tc_maxrate; // kbit/s, 0 = unlimited

  // ECN/DCQCN: priorities with ECN enabled at the notification point (receiver, sends
  // CNPs) and the reaction point (sender, slows down), from
  // /sys/class/net/DEV/ecn/roce_np|roce_rp/enable/P.
  std::optional<uint8_t> ecn_np;
  std::optional<uint8_t> ecn_rp;

  // RDMA defaults: RDMA-CM default ToS and RoCE mode (configfs rdma_cm) and the RDMA
  // device's traffic class. rdma_device defaults to the RDMA device on the netdev.
  std::optional<std::string> rdma_device;
  std::optional<uint8_t> cm_default_tos;
  std::optional<std::string> cm_default_roce_mode; // "IB/RoCE v1" or "RoCE v2"
  std::optional<uint8_t> rdma_traffic_class;
};

struct Profile {
  std::string name;                 // optional "name:" or the file's name
  std::vector<std::string> devices; // netdevs this profile is for (may be empty)
  DesiredConfig config;
};

// Parses YAML or JSON (JSON is YAML; both go through one parser). Errors are
// kInvalidConfig and name the field and the line: "ets.tc_bw (line 12): shares of ETS
// traffic classes sum to 90, not 100".
Result<Profile> parse_profile(const std::string& text, const std::string& source_name);
// A profile is a few hundred bytes; a file beyond this is not one.
inline constexpr std::size_t kMaxProfileBytes = 1 << 20;
// Reads a regular file of at most kMaxProfileBytes and parses it.
Result<Profile> load_profile(const std::string& path);

} // namespace fabric::pfc
