#include "cni/gid_wait.h"

#include <algorithm>
#include <arpa/inet.h>
#include <thread>
#include <vector>

#include "common/rdma_sysfs.h"

namespace fabric::cni {
namespace {

using Clock = std::chrono::steady_clock;

// The first polls come quickly (the kernel usually needs a few milliseconds), later ones
// less often so that a long wait does not spin.
constexpr std::chrono::milliseconds kFirstPoll{5};
constexpr std::chrono::milliseconds kMaxPoll{100};

std::string describe_entry(const rdma::GidEntry& e) {
  return "index " + std::to_string(e.index) + " (" + std::string(rdma::gid_type_name(e.type)) +
         (e.netdev.empty() ? std::string(", no netdev") : ", netdev " + e.netdev) + ")";
}

// Why the table does not (yet) satisfy the wait: what it holds for the address.
std::string explain(const std::vector<rdma::GidEntry>& table, const std::string& ipv4,
                    const std::string& netdev, const std::string& where) {
  std::vector<const rdma::GidEntry*> same_address;
  for (const auto& e : table) {
    if (e.ipv4 == ipv4) same_address.push_back(&e);
  }
  const std::string gid = "::ffff:" + ipv4;
  if (same_address.empty()) {
    return where + " has no GID " + gid + " (" + std::to_string(table.size()) +
           " valid entries); the kernel adds it once " + ipv4 + " is on " + netdev + " and " +
           netdev + " sits on the RDMA device's netdev";
  }
  std::string seen;
  bool v2_elsewhere = false;
  for (const auto* e : same_address) {
    seen += (seen.empty() ? "" : ", ") + describe_entry(*e);
    if (e->type == rdma::GidType::kRoceV2) v2_elsewhere = true;
  }
  if (v2_elsewhere) {
    return where + " has " + gid + " as RoCE v2 but on another netdev than " + netdev + ": " +
           seen + " (is the address configured on another interface too?)";
  }
  return where + " has " + gid + " only as RoCE v1 or another type, not RoCE v2: " + seen;
}

} // namespace

Result<uint32_t> wait_for_roce_v2_gid(const SysfsReader& sysfs, const std::string& rdma_device,
                                      uint32_t port, const std::string& ipv4,
                                      const std::string& netdev,
                                      std::chrono::milliseconds timeout) {
  const std::string what = "waiting for the RoCE v2 GID of " + ipv4 + " on " + netdev;
  in_addr parsed{};
  if (inet_pton(AF_INET, ipv4.c_str(), &parsed) != 1) {
    return Error(ErrorCode::kInvalidArgument, what, "'" + ipv4 + "' is not an IPv4 address");
  }
  const std::string where = rdma_device + " port " + std::to_string(port);
  const auto deadline = Clock::now() + timeout;
  auto pause = kFirstPoll;
  for (;;) {
    FABRIC_ASSIGN_OR_RETURN(auto table,
                            rdma::read_sysfs_gid_table(sysfs, rdma_device, port).context(what));
    for (const auto& e : table) {
      if (e.type == rdma::GidType::kRoceV2 && e.ipv4 == ipv4 && e.netdev == netdev) {
        return e.index;
      }
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return Error(ErrorCode::kTimeout, what,
                   "not there after " + std::to_string(timeout.count()) +
                       " ms: " + explain(table, ipv4, netdev, where));
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, kMaxPoll);
  }
}

} // namespace fabric::cni
