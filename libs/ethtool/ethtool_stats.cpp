#include "libs/ethtool/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/fd.h"

namespace fabric::probes {
namespace {

// Runs one ETHTOOL_* command whose request starts at `data`.
Result<void> ethtool_ioctl(int sock, const std::string& netdev, void* data, const char* what) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (::ioctl(sock, SIOCETHTOOL, &ifr) != 0) {
    const int err = errno;
    if (err == ENODEV) {
      return Error::from_errno(err, std::string("ethtool ") + what,
                               "no netdev " + netdev + " in this network namespace");
    }
    if (err == EOPNOTSUPP) {
      return Error::from_errno(err, std::string("ethtool ") + what,
                               netdev + "'s driver reports no statistics");
    }
    return Error::from_errno(err, std::string("ethtool ") + what, netdev);
  }
  return Ok();
}

// A zeroed buffer of at least `bytes`, aligned for the ethtool structs (they hold u64).
std::vector<uint64_t> buffer(std::size_t bytes) {
  return std::vector<uint64_t>((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
}

} // namespace

Result<std::vector<EthtoolStat>> read_ethtool_stats(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    return Error(ErrorCode::kInvalidArgument, "netdev '" + netdev + "'",
                 "a netdev name has 1 to " + std::to_string(IFNAMSIZ - 1) + " characters");
  }
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) return Error::from_errno(errno, "socket(AF_INET, SOCK_DGRAM) for ethtool");

  auto info_buf = buffer(sizeof(ethtool_sset_info) + sizeof(uint32_t));
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  FABRIC_TRY(ethtool_ioctl(sock.get(), netdev, info, "GSSET_INFO"));
  if ((info->sset_mask & (1ULL << ETH_SS_STATS)) == 0 || info->data[0] == 0) {
    return Error(ErrorCode::kUnsupported, "ethtool GSSET_INFO",
                 netdev + "'s driver reports no statistics");
  }
  const uint32_t count = info->data[0];

  auto names_buf = buffer(sizeof(ethtool_gstrings) + std::size_t{count} * ETH_GSTRING_LEN);
  auto* names = reinterpret_cast<ethtool_gstrings*>(names_buf.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_STATS;
  names->len = count;
  FABRIC_TRY(ethtool_ioctl(sock.get(), netdev, names, "GSTRINGS"));

  // The kernel writes as many values as the driver counts at this moment; the count only
  // changes when the driver reconfigures (ethtool itself has the same window).
  auto values_buf = buffer(sizeof(ethtool_stats) + std::size_t{count} * sizeof(uint64_t));
  auto* values = reinterpret_cast<ethtool_stats*>(values_buf.data());
  values->cmd = ETHTOOL_GSTATS;
  values->n_stats = count;
  FABRIC_TRY(ethtool_ioctl(sock.get(), netdev, values, "GSTATS"));

  const uint32_t n = std::min({count, names->len, values->n_stats});
  std::vector<EthtoolStat> stats;
  stats.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const char* name =
        reinterpret_cast<const char*>(names->data) + std::size_t{i} * ETH_GSTRING_LEN;
    stats.push_back(
        EthtoolStat{std::string(name, strnlen(name, ETH_GSTRING_LEN)), values->data[i]});
  }
  return stats;
}

bool is_pause_stat(std::string_view name) {
  return name.find("pause") != std::string_view::npos;
}

} // namespace fabric::probes
