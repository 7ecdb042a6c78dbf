#include "probes/lint/lint.h"

#include <algorithm>
#include <set>

#include "common/strings.h"
#include "common/units.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::probes {
using rdma::GidEntry;
using rdma::GidType;
namespace {

constexpr std::string_view kRocePorts = "roce_ports";
constexpr std::string_view kMtu = "mtu_match";
constexpr std::string_view kGid = "roce_v2_gid";
constexpr std::string_view kPfc = "pfc_on_roce_priority";
constexpr std::string_view kCmMode = "rdma_cm_roce_mode";
constexpr std::string_view kMemlock = "memlock";
constexpr std::string_view kNetnsMode = "rdma_netns_mode";

constexpr uint32_t kIbMtus[] = {4096, 2048, 1024, 512, 256};

LintCheck make(std::string_view id, Verdict verdict, std::string subject, std::string message) {
  return LintCheck{std::string(id), verdict, std::move(subject), std::move(message)};
}

std::string port_subject(const LintPort& p) {
  std::string s = p.device + "/" + std::to_string(p.port);
  return p.netdev.empty() ? s : s + " " + p.netdev;
}

std::string size_text(uint64_t bytes) {
  return units::format_size(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

// The GID entries that concern `ipv4`, best first: the RoCE v2 entry on `netdev`, then
// any other entry for the address.
struct GidLookup {
  const GidEntry* exact = nullptr;        // RoCE v2, right netdev
  const GidEntry* other_netdev = nullptr; // RoCE v2, another netdev
  const GidEntry* v1 = nullptr;           // RoCE v1 only
};

GidLookup find_gid(const LintPort& port, const std::string& netdev, const std::string& ipv4) {
  GidLookup found;
  for (const auto& g : port.gids) {
    if (!g.ipv4 || *g.ipv4 != ipv4) continue;
    if (g.type == GidType::kRoceV2) {
      if (g.netdev == netdev && !found.exact) found.exact = &g;
      if (g.netdev != netdev && !found.other_netdev) found.other_netdev = &g;
    } else if (g.type == GidType::kRoceV1 && !found.v1) {
      found.v1 = &g;
    }
  }
  return found;
}

std::string gid_where(const LintPort& port, const GidEntry& g) {
  return "index " + std::to_string(g.index) + " " + g.gid + " on " + port.device + " port " +
         std::to_string(port.port);
}

LintCheck check_one_address(const LintPort& port, const std::string& netdev,
                            const std::string& ipv4) {
  std::string subject = netdev + " " + ipv4;
  GidLookup found = find_gid(port, netdev, ipv4);
  if (found.exact) {
    return make(kGid, Verdict::kPass, subject, "RoCE v2 GID " + gid_where(port, *found.exact));
  }
  const std::string fix = "; the kernel adds it when the address is on a netdev the RDMA "
                          "device serves: check that " +
                          netdev +
                          " is up and that "
                          "`fabric-probe devices -d " +
                          port.device + "` lists it";
  if (found.other_netdev) {
    return make(kGid, Verdict::kFail, subject,
                "the RoCE v2 GID for " + ipv4 + " (" + gid_where(port, *found.other_netdev) +
                    ") belongs to netdev " + found.other_netdev->netdev + ", not " + netdev +
                    ": traffic from " + netdev + " cannot use it" + fix);
  }
  if (found.v1) {
    return make(kGid, Verdict::kFail, subject,
                "only a RoCE v1 GID for " + ipv4 + " (" + gid_where(port, *found.v1) +
                    "): RoCE v1 is not routable and carries no DSCP; the device or its "
                    "driver does not offer RoCE v2 on " +
                    netdev);
  }
  return make(kGid, Verdict::kFail, subject,
              "no GID ::ffff:" + ipv4 + " in " + port.device + " port " +
                  std::to_string(port.port) + "'s table" + fix);
}

// The priorities the APP table maps `dscp` to (several entries may exist).
std::vector<uint8_t> dscp_priorities(const std::vector<pfc::AppEntry>& apps, uint8_t dscp) {
  std::set<uint8_t> prios;
  for (const auto& app : apps) {
    if (app.selector == static_cast<uint8_t>(pfc::AppSelector::kDscp) && app.protocol == dscp) {
      prios.insert(app.priority);
    }
  }
  return {prios.begin(), prios.end()};
}

bool any_dscp_entry(const std::vector<pfc::AppEntry>& apps) {
  return std::any_of(apps.begin(), apps.end(), [](const pfc::AppEntry& a) {
    return a.selector == static_cast<uint8_t>(pfc::AppSelector::kDscp);
  });
}

LintCheck check_pfc_on(const std::string& netdev, const pfc::DcbState& state, uint8_t dscp) {
  const std::string subject = netdev;
  if (!state.pfc) {
    return make(kPfc, Verdict::kUnknown, subject,
                netdev + "'s driver reports no PFC configuration (no ieee_getpfc op)");
  }
  const uint8_t enabled = state.pfc->pfc_en;
  const std::string pfc_text = "PFC " + pfc::format::prio_bits(enabled);
  const std::string d = "DSCP " + std::to_string(dscp);
  auto on = [&](uint8_t prio) { return (enabled >> prio & 1u) != 0; };

  std::vector<uint8_t> prios = dscp_priorities(state.apps, dscp);
  if (prios.empty()) {
    // mlx5 in DSCP trust lists all 64 DSCP values in the APP table, so no DSCP entry at
    // all means trust PCP; an unmapped value under DSCP trust is the driver's default.
    std::string found = any_dscp_entry(state.apps)
                            ? "the APP table maps other DSCP values but not " +
                                  std::to_string(dscp) + ", so RoCE traffic marked " + d +
                                  " gets the NIC's default, assumed priority 0; "
                            : "the APP table has no DSCP entries: the NIC does not trust DSCP, "
                              "so untagged RoCE traffic goes to priority 0, the default for "
                              "untrusted traffic; ";
    found += pfc_text;
    std::string fix = "; map it: `fabric-pfc set " + netdev + " --dscp-prio " +
                      std::to_string(dscp) + ":PRIO --prio-pfc PRIO:on` (or apply a RoCE profile)";
    if (on(0)) {
      return make(kPfc, Verdict::kWarn, subject,
                  found + " (priority 0 is lossless, so this works, but every other flow " +
                      "shares it)" + fix);
    }
    return make(kPfc, Verdict::kFail, subject,
                found + ": priority 0 is lossy, RoCE packets are dropped under congestion" + fix);
  }
  std::vector<std::string> lossy;
  std::vector<std::string> mapped;
  for (uint8_t p : prios) {
    mapped.push_back(std::to_string(p));
    if (!on(p)) lossy.push_back(std::to_string(p));
  }
  std::string found = d + " -> priority " + join(mapped, "/") + " (APP table); " + pfc_text;
  if (lossy.empty()) {
    return make(kPfc, Verdict::kPass, subject, found);
  }
  return make(kPfc, Verdict::kFail, subject,
              found + ": PFC is off on priority " + join(lossy, "/") +
                  ", RoCE packets are dropped under congestion; enable it: `fabric-pfc set " +
                  netdev + " --prio-pfc " + lossy.front() + ":on` (and on the switch port)");
}

} // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
  case Verdict::kPass: return "pass";
  case Verdict::kWarn: return "warn";
  case Verdict::kFail: return "fail";
  case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

Error not_collected(std::string what) {
  return Error(ErrorCode::kInternal, std::move(what), "not collected");
}

uint32_t expected_roce_mtu(uint32_t netdev_mtu, std::optional<uint32_t> max_mtu) {
  if (netdev_mtu < kRoceHeaderBytes) return 0;
  const uint32_t room = netdev_mtu - kRoceHeaderBytes;
  for (uint32_t mtu : kIbMtus) {
    if (mtu <= room && (!max_mtu || *max_mtu == 0 || mtu <= *max_mtu)) return mtu;
  }
  return 0;
}

bool is_roce_port(const LintPort& port) {
  return port.link_layer == "Ethernet";
}

std::vector<LintCheck> check_roce_ports(const LintInputs& inputs) {
  std::vector<std::string> roce;
  std::vector<std::string> other;
  for (const auto& p : inputs.ports) {
    (is_roce_port(p) ? roce : other).push_back(port_subject(p));
  }
  if (!roce.empty()) {
    return {make(kRocePorts, Verdict::kPass, "node",
                 std::to_string(roce.size()) + " RoCE port" + (roce.size() == 1 ? "" : "s") + ": " +
                     join(roce))};
  }
  std::string found = other.empty()
                          ? "no RDMA device (no /sys/class/infiniband entries)"
                          : "no RDMA port with an Ethernet link layer (only " + join(other) + ")";
  return {make(kRocePorts, Verdict::kFail, "node",
               found + ": load the NIC's RDMA driver (mlx5_ib, ...) or, without RoCE "
                       "hardware, add a soft-RoCE device: `rdma link add rxe0 type rxe netdev "
                       "IFACE`")};
}

std::vector<LintCheck> check_mtu(const LintInputs& inputs) {
  std::vector<LintCheck> checks;
  for (const auto& p : inputs.ports) {
    if (!is_roce_port(p)) continue;
    const std::string subject = port_subject(p);
    if (p.netdev.empty()) {
      checks.push_back(make(kMtu, Verdict::kUnknown, subject,
                            "the port's GID table names no netdev, so there is no netdev MTU "
                            "to compare with"));
      continue;
    }
    if (!p.active_mtu.ok()) {
      checks.push_back(make(kMtu, Verdict::kUnknown, subject,
                            "active MTU not readable: " + p.active_mtu.error().message()));
      continue;
    }
    if (!p.netdev_mtu.ok()) {
      checks.push_back(make(kMtu, Verdict::kUnknown, subject,
                            "netdev MTU not readable: " + p.netdev_mtu.error().message()));
      continue;
    }
    const uint32_t active = *p.active_mtu;
    const uint32_t netdev = *p.netdev_mtu;
    const uint32_t expected = expected_roce_mtu(netdev, p.max_mtu);
    std::string found = "RoCE active MTU " + std::to_string(active) + ", " + p.netdev + " MTU " +
                        std::to_string(netdev);
    std::string rule = " (RoCE MTU <= netdev MTU - " + std::to_string(kRoceHeaderBytes) +
                       " header bytes" +
                       (p.max_mtu ? ", port max " + std::to_string(*p.max_mtu) : "") +
                       ": expected " + std::to_string(expected) + ")";
    const std::string largest = std::to_string(active + kRoceHeaderBytes);
    if (active > expected) {
      checks.push_back(make(kMtu, Verdict::kFail, subject,
                            found + rule + ": full-size RDMA packets (up to " + largest +
                                " bytes with headers) exceed the netdev MTU and are dropped; "
                                "raise " +
                                p.netdev + "'s MTU to at least " + largest +
                                " (and the switch's), or reload the driver so that the port "
                                "follows the netdev"));
    } else if (active < expected) {
      checks.push_back(make(kMtu, Verdict::kWarn, subject,
                            found + rule +
                                ": RDMA packets are smaller than the netdev could "
                                "carry (more packets and header bytes for the same data); the "
                                "driver did not raise the port's MTU with the netdev's: bounce "
                                "the link (`ip link set " +
                                p.netdev + " down; ip link set " + p.netdev +
                                " up`) or reload the driver"));
    } else {
      checks.push_back(make(kMtu, Verdict::kPass, subject, found + rule));
    }
  }
  return checks;
}

std::vector<LintCheck> check_roce_v2_gids(const LintInputs& inputs) {
  std::vector<LintCheck> checks;
  for (const auto& p : inputs.ports) {
    if (!is_roce_port(p) || p.netdevs.empty()) continue;
    std::size_t addresses = 0;
    for (const auto& netdev : p.netdevs) {
      auto it = inputs.ipv4.find(netdev);
      if (it == inputs.ipv4.end()) continue;
      for (const auto& ipv4 : it->second) {
        checks.push_back(check_one_address(p, netdev, ipv4));
        ++addresses;
      }
    }
    if (addresses == 0) {
      checks.push_back(make(kGid, Verdict::kWarn, port_subject(p),
                            "no IPv4 address on " + join(p.netdevs) +
                                " in this network namespace: nothing for RoCE v2 over IPv4 "
                                "to use here (fine when pods bring their own addresses)"));
    }
  }
  return checks;
}

std::vector<LintCheck> check_pfc(const LintInputs& inputs, uint8_t dscp) {
  std::vector<LintCheck> checks;
  std::set<std::string> seen;
  for (const auto& p : inputs.ports) {
    if (!is_roce_port(p) || p.netdev.empty() || !seen.insert(p.netdev).second) continue;
    auto it = inputs.dcb.find(p.netdev);
    if (it == inputs.dcb.end()) {
      checks.push_back(make(kPfc, Verdict::kUnknown, p.netdev, "DCB state not read"));
      continue;
    }
    const Result<pfc::DcbState>& state = it->second;
    if (state.ok()) {
      checks.push_back(check_pfc_on(p.netdev, *state, dscp));
    } else if (state.error().code() == ErrorCode::kUnsupported) {
      checks.push_back(make(kPfc, Verdict::kUnknown, p.netdev,
                            p.netdev + "'s driver has no DCB support (EOPNOTSUPP), so PFC "
                                       "cannot be read here; a lossless priority, if any, is "
                                       "configured in the NIC's firmware or not at all"));
    } else {
      checks.push_back(make(kPfc, Verdict::kUnknown, p.netdev,
                            "DCB state not readable: " + state.error().message()));
    }
  }
  return checks;
}

LintCheck check_memlock(const Result<MemlockLimit>& memlock, uint64_t min_bytes) {
  const std::string subject = "node";
  if (!memlock.ok()) {
    return make(kMemlock, Verdict::kUnknown, subject,
                "RLIMIT_MEMLOCK not readable: " + memlock.error().message());
  }
  auto text = [](std::optional<uint64_t> v) { return v ? size_text(*v) : "unlimited"; };
  const std::string found =
      "RLIMIT_MEMLOCK soft " + text(memlock->soft) + ", hard " + text(memlock->hard);
  if (!memlock->soft || *memlock->soft >= min_bytes) {
    return make(kMemlock, Verdict::kPass, subject,
                found + (memlock->soft ? " (at least " + units::format_size(min_bytes) + ")"
                                       : std::string()));
  }
  std::string fix = ": RDMA memory registration pins pages against it and fails with ENOMEM "
                    "past it; raise it: `ulimit -l unlimited` in the launching shell, "
                    "LimitMEMLOCK=infinity in the container runtime's systemd unit, or "
                    "'* - memlock unlimited' in /etc/security/limits.conf";
  if (memlock->hard && *memlock->hard < min_bytes) {
    fix += " (the hard limit is below too: only root can raise it)";
  }
  return make(kMemlock, Verdict::kFail, subject,
              found + ", below " + units::format_size(min_bytes) + fix);
}

LintCheck check_netns_mode(const Result<rdma::NetnsMode>& mode,
                           std::optional<rdma::NetnsMode> expected) {
  const std::string subject = "rdma";
  if (!mode.ok()) {
    return make(kNetnsMode, Verdict::kUnknown, subject,
                "RDMA netns mode not readable: " + mode.error().message());
  }
  const std::string name(rdma::netns_mode_name(*mode));
  std::string found = "RDMA netns mode " + name + " (" +
                      (*mode == rdma::NetnsMode::kShared
                           ? "every RDMA device is visible in every network namespace; "
                             "fabric-cni's shared mode"
                           : "each RDMA device belongs to one network namespace; fabric-cni's "
                             "exclusive mode") +
                      ")";
  if (expected && *expected != *mode) {
    return make(kNetnsMode, Verdict::kWarn, subject,
                found + ", expected " + std::string(rdma::netns_mode_name(*expected)) +
                    ": `rdma system set netns " + std::string(rdma::netns_mode_name(*expected)) +
                    "` works only while no network namespace other than the initial one "
                    "exists (at boot, or with the ib_core module parameter netns_mode=" +
                    (*expected == rdma::NetnsMode::kShared ? "1" : "0") + ")");
  }
  return make(kNetnsMode, Verdict::kPass, subject, found);
}

std::vector<LintCheck> check_cm_roce_mode(const LintInputs& inputs) {
  std::vector<LintCheck> checks;
  for (const auto& [device, mode] : inputs.cm_roce_mode) {
    const std::string file = "/sys/kernel/config/rdma_cm/" + device + "/ports/1/default_roce_mode";
    if (!mode.ok()) {
      checks.push_back(
          make(kCmMode, Verdict::kUnknown, device,
               "rdma_cm default_roce_mode not readable: " + mode.error().message() +
                   (mode.error().hint().empty() ? "" : " (" + mode.error().hint() + ")")));
    } else if (!*mode) {
      checks.push_back(make(kCmMode, Verdict::kUnknown, device,
                            "RDMA-CM configfs not available (is configfs mounted on "
                            "/sys/kernel/config and rdma_cm loaded? `mount -t configfs none "
                            "/sys/kernel/config; modprobe rdma_cm`)"));
    } else if (**mode == "RoCE v2") {
      checks.push_back(make(kCmMode, Verdict::kPass, device,
                            "rdma_cm connections default to RoCE v2 (" + file + ")"));
    } else if (**mode == "IB/RoCE v1" || **mode == "RoCE v1") {
      checks.push_back(make(kCmMode, Verdict::kFail, device,
                            "rdma_cm connections default to RoCE v1, which has no IP header: "
                            "not routable, no DSCP, no ECN; set RoCE v2: `echo 'RoCE v2' > " +
                                file +
                                "` (or rdma.cm_default_roce_mode in a fabric-pfc "
                                "profile)"));
    } else {
      checks.push_back(make(kCmMode, Verdict::kUnknown, device,
                            "unrecognised default_roce_mode '" + **mode + "' in " + file));
    }
  }
  return checks;
}

std::vector<LintCheck> run_lint(const LintInputs& inputs, const LintOptions& options) {
  std::vector<LintCheck> checks;
  auto add = [&](std::vector<LintCheck> more) {
    for (auto& c : more)
      checks.push_back(std::move(c));
  };
  add(check_roce_ports(inputs));
  add(check_mtu(inputs));
  add(check_roce_v2_gids(inputs));
  add(check_pfc(inputs, options.dscp));
  add(check_cm_roce_mode(inputs));
  checks.push_back(check_memlock(inputs.memlock, options.min_memlock));
  checks.push_back(check_netns_mode(inputs.netns_mode, options.expect_netns_mode));
  add(check_gpu_nic_distance(inputs.gpu_nic));
  return checks;
}

int lint_exit_status(const std::vector<LintCheck>& checks) {
  bool failed = std::any_of(checks.begin(), checks.end(),
                            [](const LintCheck& c) { return c.verdict == Verdict::kFail; });
  return failed ? kExitBelowThreshold : kExitOk;
}

} // namespace fabric::probes
