#include "probes/agent/agent_access.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "common/units.h"

namespace fabric::probes {
namespace {

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// The peer as a family and its address bytes, IPv4-mapped IPv6 unwrapped.
bool peer_bytes(const sockaddr* peer, socklen_t length, int& family, const uint8_t*& bytes) {
  if (peer->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    family = AF_INET;
    bytes = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(peer)->sin_addr);
    return true;
  }
  if (peer->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const uint8_t* raw = reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr.s6_addr;
    if (std::memcmp(raw, kV4MappedPrefix, sizeof kV4MappedPrefix) == 0) {
      family = AF_INET;
      bytes = raw + 12;
    } else {
      family = AF_INET6;
      bytes = raw;
    }
    return true;
  }
  return false;
}

bool prefix_equal(const uint8_t* a, const uint8_t* b, unsigned prefix) {
  unsigned whole = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a, b, whole) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

void clear_host_bits(std::array<uint8_t, 16>& address, unsigned prefix, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    unsigned bits_before = static_cast<unsigned>(i) * 8;
    if (prefix >= bits_before + 8) continue;
    unsigned keep = prefix > bits_before ? prefix - bits_before : 0;
    address[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
}

std::string seconds_text(std::chrono::nanoseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", units::seconds(d));
  return text;
}

} // namespace

bool Cidr::contains(const sockaddr* peer, socklen_t length) const {
  int peer_family;
  const uint8_t* bytes;
  if (!peer_bytes(peer, length, peer_family, bytes) || peer_family != family) return false;
  return prefix_equal(bytes, address.data(), prefix);
}

std::string Cidr::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family, address.data(), host, sizeof host);
  return std::string(host) + "/" + std::to_string(prefix);
}

Result<Cidr> parse_cidr(std::string_view text, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, std::string(what),
                 "'" + std::string(text) + "' " + why);
  };
  std::string address(text.substr(0, text.find('/')));
  Cidr cidr;
  std::size_t size;
  if (inet_pton(AF_INET, address.c_str(), cidr.address.data()) == 1) {
    cidr.family = AF_INET;
    size = 4;
  } else if (inet_pton(AF_INET6, address.c_str(), cidr.address.data()) == 1) {
    cidr.family = AF_INET6;
    size = 16;
  } else {
    return bad("is not an IPv4 or IPv6 address or network (10.0.0.0/8, fd00::/64)");
  }
  cidr.prefix = static_cast<unsigned>(size * 8);
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    auto prefix = units::parse_uint(text.substr(slash + 1), what, 0, size * 8);
    if (!prefix.ok()) {
      return bad("has a prefix length that is not 0-" + std::to_string(size * 8));
    }
    cidr.prefix = static_cast<unsigned>(*prefix);
  }
  if (cidr.family == AF_INET6 && cidr.prefix >= 96 &&
      std::memcmp(cidr.address.data(), kV4MappedPrefix, sizeof kV4MappedPrefix) == 0) {
    std::memmove(cidr.address.data(), cidr.address.data() + 12, 4);
    std::memset(cidr.address.data() + 4, 0, 12);
    cidr.family = AF_INET;
    cidr.prefix -= 96;
    size = 4;
  }
  clear_host_bits(cidr.address, cidr.prefix, size);
  return cidr;
}

bool allowed(const std::vector<Cidr>& allow, const sockaddr* peer, socklen_t length) {
  if (allow.empty()) return true;
  for (const Cidr& cidr : allow) {
    if (cidr.contains(peer, length)) return true;
  }
  return false;
}

Result<void> check_demand(const ClientLimits& limits, const SessionDemand& demand,
                          const ClientUsage& usage, std::string_view client) {
  const std::string who = "client " + std::string(client);
  if (usage.sessions >= limits.max_sessions) {
    return Error(ErrorCode::kTryAgain, "agent limits",
                 who + " already runs " + std::to_string(usage.sessions) +
                     " sessions, the most one client may run at once (--max-client-sessions " +
                     std::to_string(limits.max_sessions) + ")");
  }
  if (demand.message_bytes > limits.max_message_bytes) {
    return Error(ErrorCode::kPermission, "agent limits",
                 who + " asks for " + units::format_size(demand.message_bytes) +
                     " messages; this agent allows at most " +
                     units::format_size(limits.max_message_bytes) + " (--max-message-size)");
  }
  if (usage.memory_bytes + demand.memory_bytes > limits.max_memory_bytes) {
    std::string held = usage.memory_bytes == 0
                           ? ""
                           : " on top of the " + units::format_size(usage.memory_bytes) +
                                 " its running sessions hold";
    return Error(ErrorCode::kPermission, "agent limits",
                 who + " asks for " + units::format_size(demand.memory_bytes) + " of buffers" +
                     held + "; this agent allows one client at most " +
                     units::format_size(limits.max_memory_bytes) + " (--max-client-memory)");
  }
  if (demand.duration && *demand.duration > limits.max_duration) {
    return Error(ErrorCode::kPermission, "agent limits",
                 who + " asks for a " + seconds_text(*demand.duration) +
                     " session; this agent allows at most " + seconds_text(limits.max_duration) +
                     " (--max-session-duration)");
  }
  return Ok();
}

} // namespace fabric::probes
