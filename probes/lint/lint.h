// fabric-probe lint: per-node pre-flight checks of the RoCE parameter plane.
//
// The checks are pure functions over a LintInputs snapshot (what the node looks like);
// lint_collect.h fills one from the real system. Each check yields a verdict:
//   pass     the setting is right for RoCE
//   warn     it works but is not what it should be (wasted MTU, trust not DSCP, ...)
//   fail     RoCE traffic will be dropped, unreachable or refused
//   unknown  the setting could not be read here (no DCB in the driver, no configfs, ...);
//            never a fail: lint does not guess
//
// The rules, and why:
//
// mtu_match (per RoCE port). The RoCE MTU (the port's active MTU, one of 256..4096) is the
//   payload of an RDMA packet; headers come on top and the whole must fit the netdev MTU.
//   The kernel derives a RoCE port's MTU from its netdev's with iboe_get_mtu(): the
//   largest IB MTU not above netdev MTU - 96 (GRH/IPv6 40 + UDP 8 + BTH 12 + XRC 4 +
//   AtomicETH 28 + ICRC 4: the largest header set any RoCE packet carries). That value,
//   capped by the port's max MTU, is the expected MTU:
//     active > expected  fail: full-size packets can exceed the netdev MTU and are dropped
//                        (seen when the netdev MTU was lowered under a driver that did
//                        not follow)
//     active < expected  warn: the netdev could carry bigger RDMA packets (the classic
//                        netdev 9000 with RoCE MTU 1024): more packets and header bytes
//                        for the same data
//     equal              pass
//   (rxe subtracts 80 rather than 96, so a netdev MTU within 16 bytes above a step, such
//   as 1110, reads as fail for it: a conservative answer, and no common MTU is affected.)
//
// roce_v2_gid (per IPv4 address). RoCE v2 addresses a peer by the GID ::ffff:a.b.c.d,
//   which the kernel adds to the RDMA device's table for every IPv4 on the port's netdev
//   and on its VLAN/macvlan uppers, with that upper as the GID's netdev. An address
//   without that entry cannot be used for RoCE v2 (rdma_cm fails to resolve it, NCCL
//   picks another GID or none): fail. A RoCE v1 entry only, or the entry on another
//   netdev, is a fail too. A port whose netdevs have no IPv4 at all is a warn: RoCE v2
//   over IPv4 needs one (pods attached by fabric-cni bring their own addresses).
//
// pfc_on_roce_priority (per RoCE netdev). RoCE needs a lossless priority. The DSCP the
//   traffic carries (--dscp, default 26: the value RoCE deployments and NVIDIA's tools
//   use) maps to a priority through the DCB APP table (DSCP selector); PFC must be
//   enabled on that priority:
//     APP entry for the DSCP, PFC on its priority     pass
//     APP entry, PFC off on its priority              fail
//     no APP entry: the NIC does not trust DSCP (or not for this value), so untagged
//     RoCE traffic goes to priority 0 (the default for untrusted traffic):
//       PFC on priority 0                             warn (lossless by accident)
//       PFC off on priority 0                         fail
//     no DCB support in the driver (EOPNOTSUPP: veth, rxe's netdev), no PFC
//     attribute, or any read error                    unknown
//
// memlock (per node). Every registered RDMA buffer and queue is pinned and counted
//   against RLIMIT_MEMLOCK (unless the process has CAP_IPC_LOCK, which workloads in
//   pods rarely have); ibv_reg_mr fails with ENOMEM past it. The soft limit is the one
//   that applies:
//     unlimited, or at least --min-memlock (default 64 MiB)   pass
//     below                                                  fail, with the fix
//   64 MiB is far above the kernel's defaults (64 KiB before Linux 5.16, 8 MiB since),
//   which are what a node that nobody configured has and which break perftest and NCCL;
//   it holds a small job's queues and NCCL's per-peer host buffers (4 MiB each by
//   default). Big host-memory jobs need more; vendors recommend unlimited.
//
// rdma_netns_mode (per node). Reported (pass); shared suits fabric-cni's shared mode,
//   exclusive its exclusive mode. With --expect-netns-mode, a different mode is a warn:
//   the mode can only change while no other network namespace exists, so it is a
//   node-provisioning matter, not a failure of this node's RoCE.
//
// rdma_cm_roce_mode (per RDMA device with a RoCE port). rdma_cm's default_roce_mode
//   (configfs) decides which GID type rdma_cm connections use: RoCE v2 pass; RoCE v1
//   (IB/RoCE v1) fail: v1 has no IP header, so it is not routable and carries no DSCP or
//   ECN; configfs not mounted or rdma_cm not loaded: unknown.
//
// roce_ports (per node). At least one RDMA port with an Ethernet link layer: the other
//   checks have nothing to look at otherwise, so none is a fail.
//
// gpu_nic_distance (per GPU the job uses). NCCL lets a NIC read and write GPU memory
//   directly (GPUDirect RDMA) only when the NIC is at PIX or PXB from the GPU
//   (NCCL_NET_GDR_LEVEL's default); farther, every transfer is staged through host memory
//   across the CPU and the all-reduce loses a large part of its bandwidth. The GPUs:
//   --gpu N, else those CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES give the job
//   (gpu_visibility.h), else every GPU. The NICs: --device, else the one --interface sits
//   on, else those serving a netdev of this network namespace (in a pod: the pod's RoCE
//   interface), else every RDMA NIC. The closest of those NICs decides, in the terms of
//   `nvidia-smi topo -m` (pci_topology.h):
//     PIX, PXB   pass
//     PHB        warn: through the host bridge; NCCL keeps GPUDirect RDMA off by default
//     NODE, SYS  fail: across host bridges or sockets
//   and a warn or fail names a NIC of the node that is closer, when there is one. No GPU,
//   or only NICs without a PCI function (rxe, siw): unknown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/rdma_device.h"
#include "common/rdma_netlink.h"
#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "libs/topology/node_topology.h"

namespace fabric::probes {

enum class Verdict { kPass, kWarn, kFail, kUnknown };
std::string_view verdict_name(Verdict verdict); // "pass", "warn", "fail", "unknown"

struct LintCheck {
  std::string id; // stable snake_case: "mtu_match", "roce_v2_gid", ...
  Verdict verdict = Verdict::kUnknown;
  std::string subject; // what was checked: "rxe0/1 eth0", "eth0 10.77.0.11", "node"
  std::string message; // what was found and, unless it passed, what to do
};

// RLIMIT_MEMLOCK in bytes; nullopt is unlimited (RLIM_INFINITY).
struct MemlockLimit {
  std::optional<uint64_t> soft;
  std::optional<uint64_t> hard;
};

// The error a LintInputs field holds until the collector (or a test) fills it.
Error not_collected(std::string what);

// One port of an RDMA device.
struct LintPort {
  std::string device;
  uint32_t port = 0;
  std::string link_layer; // "Ethernet" for RoCE; other ports are not checked
  // The port's own netdev (the netdev of its GID index 0); "" when none is named.
  std::string netdev;
  Result<uint32_t> netdev_mtu = not_collected("netdev MTU");
  Result<uint32_t> active_mtu = not_collected("active MTU");
  std::optional<uint32_t> max_mtu;
  std::vector<rdma::GidEntry> gids;
  // The netdevs whose IPv4 addresses need RoCE v2 GIDs on this port, as this network
  // namespace sees them: the port's netdev, then its VLAN/macvlan uppers and the other
  // netdevs its GID table names.
  std::vector<std::string> netdevs;
};

// What gpu_nic_distance looks at: the node's GPUs and NICs and the ones the job uses.
struct GpuNicInputs {
  topo::NodeTopology node;
  std::vector<std::size_t> gpus;  // indexes into node.gpus, in the job's CUDA order
  std::string gpus_from;          // "--gpu 1", "CUDA_VISIBLE_DEVICES=1,0", "every GPU"
  std::vector<std::size_t> nics;  // indexes into node.nics
  std::string nics_from;          // "--device mlx5_0", "--interface net1", ...
  std::vector<std::string> notes; // e.g. CUDA_VISIBLE_DEVICES entries that name no GPU
};

struct LintInputs {
  std::vector<LintPort> ports;
  // IPv4 addresses (dotted quad, no prefix) of the netdevs in the ports' `netdevs`.
  std::map<std::string, std::vector<std::string>> ipv4;
  // DCB state of each RoCE port's netdev, or why it could not be read.
  std::map<std::string, Result<pfc::DcbState>> dcb;
  // rdma_cm default_roce_mode ("RoCE v2", "IB/RoCE v1") of each RDMA device with a RoCE
  // port; nullopt when RDMA-CM's configfs is not available.
  std::map<std::string, Result<std::optional<std::string>>> cm_roce_mode;
  Result<MemlockLimit> memlock = not_collected("RLIMIT_MEMLOCK");
  Result<rdma::NetnsMode> netns_mode = not_collected("RDMA netns mode");
  Result<GpuNicInputs> gpu_nic = not_collected("GPU and NIC topology");
};

// The DSCP RoCE traffic is commonly marked with (ToS 106 = DSCP 26 with ECT).
inline constexpr uint8_t kDefaultRoceDscp = 26;
inline constexpr uint64_t kDefaultMinMemlock = 64ull << 20;
// Header bytes the kernel reserves between a netdev MTU and a RoCE MTU (iboe_get_mtu).
inline constexpr uint32_t kRoceHeaderBytes = 96;

struct LintOptions {
  uint8_t dscp = kDefaultRoceDscp;
  std::optional<rdma::NetnsMode> expect_netns_mode;
  uint64_t min_memlock = kDefaultMinMemlock;
};

// The RoCE MTU the kernel derives from `netdev_mtu` (iboe_get_mtu), capped by `max_mtu`;
// 0 when the netdev MTU is too small for any.
uint32_t expected_roce_mtu(uint32_t netdev_mtu, std::optional<uint32_t> max_mtu);

// True for ports that carry RoCE (Ethernet link layer).
bool is_roce_port(const LintPort& port);

std::vector<LintCheck> check_roce_ports(const LintInputs& inputs);
std::vector<LintCheck> check_mtu(const LintInputs& inputs);
std::vector<LintCheck> check_roce_v2_gids(const LintInputs& inputs);
std::vector<LintCheck> check_pfc(const LintInputs& inputs, uint8_t dscp);
LintCheck check_memlock(const Result<MemlockLimit>& memlock, uint64_t min_bytes);
LintCheck check_netns_mode(const Result<rdma::NetnsMode>& mode,
                           std::optional<rdma::NetnsMode> expected);
std::vector<LintCheck> check_cm_roce_mode(const LintInputs& inputs);
std::vector<LintCheck> check_gpu_nic_distance(const Result<GpuNicInputs>& inputs);

// Every check, in a fixed order: roce_ports, mtu_match, roce_v2_gid,
// pfc_on_roce_priority, rdma_cm_roce_mode, memlock, rdma_netns_mode, gpu_nic_distance.
std::vector<LintCheck> run_lint(const LintInputs& inputs, const LintOptions& options);

// kExitOk when no check failed, kExitBelowThreshold when one did (warn and unknown do
// not fail a node).
int lint_exit_status(const std::vector<LintCheck>& checks);

} // namespace fabric::probes
