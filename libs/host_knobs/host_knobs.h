// The RoCE settings a profile names that live outside DCB netlink: ECN/DCQCN per
// priority (mlx5 sysfs), the RDMA-CM defaults (configfs) and the RDMA device's traffic
// class (mlx5 sysfs). Every path is under a root folder that stands for "/", so tests
// point it at a temporary directory.
//
// Paths, relative to the root:
//   sys/class/net/DEV/ecn/roce_np/enable/P         "0" or "1", P = 0..7
//   sys/class/net/DEV/ecn/roce_rp/enable/P
//   sys/kernel/config/rdma_cm/RDMADEV/ports/P/default_roce_tos    "106"
//   sys/kernel/config/rdma_cm/RDMADEV/ports/P/default_roce_mode   "RoCE v2"
//   sys/class/infiniband/RDMADEV/tc/P/traffic_class  write "tclass=106", reads back
//                                                    "Global tclass=106" or "tclass=106"
//   sys/class/net/DEV/device/infiniband/RDMADEV      the RDMA device of a netdev
//   sys/class/infiniband/RDMADEV/ports/P/gid_attrs/ndevs/0   the netdev of port P
// P is the port of the RDMA device that serves DEV: the one whose own netdev (that of its
// GID 0) is DEV, or the device's only port. Dual-port devices have the rdma.* knobs once
// per port.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::pfc {

// The knobs' values on this host. An empty optional means "not available here" (no
// such file: another driver, configfs not mounted, no RDMA device) or "not read" (see
// KnobSelection). As a change (Plan::host_change) the set fields are the values to write.
struct HostState {
  std::optional<uint8_t> ecn_np; // bit p: ECN on priority p at the notification point
  std::optional<uint8_t> ecn_rp; // bit p: ECN on priority p at the reaction point
  std::optional<uint8_t> cm_default_tos;
  std::optional<std::string> cm_default_roce_mode; // "IB/RoCE v1" or "RoCE v2"
  std::optional<uint8_t> rdma_traffic_class;
  // The RDMA device the rdma.* knobs belong to (the override, or the one on the
  // netdev); empty when there is none.
  std::string rdma_device;
  // Its port that serves the netdev; nullopt with the reason when none can be told.
  std::optional<uint32_t> rdma_port;
  std::string rdma_port_problem;

  bool has_any() const {
    return ecn_np || ecn_rp || cm_default_tos || cm_default_roce_mode || rdma_traffic_class;
  }
};

// Which knobs read() looks at. Reading the RDMA-CM defaults may need a mkdir in
// configfs, which only root may do, so plan and verify read only what the profile names.
struct KnobSelection {
  bool ecn_np = true;
  bool ecn_rp = true;
  bool cm_default_tos = true;
  bool cm_default_roce_mode = true;
  bool rdma_traffic_class = true;
  // The knobs that are set in `wanted`.
  static KnobSelection of(const HostState& wanted);
};

// What apply() did to one knob.
enum class KnobOutcome { kApplied, kUnchanged, kNotAvailable, kFailed };
std::string_view knob_outcome_name(KnobOutcome outcome); // "applied", "not_available", ...

struct KnobResult {
  std::string attribute; // "ecn.roce_np", "rdma.cm_default_tos", ...
  KnobOutcome outcome;
  // applied: "OLD -> NEW"; unchanged: the value; not available: why; failed: the error.
  std::string detail;
};

struct KnobReport {
  std::vector<KnobResult> knobs; // one per knob that `wanted` names, in attribute order
  const KnobResult* find(std::string_view attribute) const;
};

// Why a knob the profile names is not available, in one place so that plan and apply
// say the same thing: "not available on this host (no /sys/class/net/eth2/ecn/roce_np;
// the mlx5 driver provides it)". `host` is what read() found.
std::string knob_unavailable_reason(std::string_view attribute, const std::string& dev,
                                    const HostState& host);

class HostKnobs {
public:
  explicit HostKnobs(std::string root = "/");
  const std::string& root() const { return root_; }

  // The RDMA device on a netdev (the first name under sys/class/net/DEV/device/
  // infiniband), or "" when it has none.
  Result<std::string> rdma_device_of(const std::string& dev) const;

  // Reads the selected knobs of `dev` and of its RDMA device (or `rdma_device_override`).
  // Errors are for files that exist but cannot be read or parsed, and for a configfs
  // mkdir refused for lack of privileges; a missing file is "not available".
  Result<HostState> read(const std::string& dev,
                         const std::optional<std::string>& rdma_device_override,
                         KnobSelection which = {});

  // Writes the knobs set in `wanted` whose current values differ, and reports every
  // knob `wanted` names: applied, unchanged, not available or failed. A failed knob does
  // not stop the others. The error is for a read that fails before anything is written.
  Result<KnobReport> apply(const std::string& dev,
                           const std::optional<std::string>& rdma_device_override,
                           const HostState& wanted);

private:
  std::string sys_root() const; // root_ + "/sys"
  std::string root_;
};

} // namespace fabric::pfc
