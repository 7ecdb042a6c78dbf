// Who may use the agent and how much: the client address allow-list (--allow) and the
// limits on what one client may ask for (sessions at once, message size, memory, duration).
// Pure logic; the agent applies it (agent.cpp) and refuses with the messages made here.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::probes {

// An IPv4 or IPv6 network. An IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) is held as
// the IPv4 network it maps, so that it and "10.0.0.0/8" mean the same clients.
struct Cidr {
  int family = AF_INET;                // AF_INET or AF_INET6
  std::array<uint8_t, 16> address{};   // network order; the first 4 bytes for IPv4
  unsigned prefix = 0;                 // 0-32 or 0-128

  // Whether `peer` (an accepted socket's address) lies in this network. A client that
  // reaches a dual-stack socket over IPv4 arrives as ::ffff:a.b.c.d and matches IPv4
  // networks.
  bool contains(const sockaddr* peer, socklen_t length) const;
  // "10.0.0.0/8", "fd00::/64".
  std::string text() const;
};

// "10.0.0.0/8", "10.1.2.3" (a single host), "fd00::/64", "::ffff:10.0.0.0/104". Host bits
// beyond the prefix are cleared ("10.1.2.3/8" is 10.0.0.0/8). `what` names the flag.
Result<Cidr> parse_cidr(std::string_view text, std::string_view what = "--allow");

// Empty: every client may connect.
bool allowed(const std::vector<Cidr>& allow, const sockaddr* peer, socklen_t length);

// What a client may ask of the agent. The defaults suit an agent on every node of a
// training cluster: enough for any diagnostic an SRE runs by hand or a mesh schedules,
// too little to pin a node's memory or hold its NIC for hours.
struct ClientLimits {
  std::size_t max_sessions = 4;           // sessions one client address runs at once
  uint64_t max_message_bytes = 64u << 20; // the largest message (RDMA) or write (TCP)
  uint64_t max_memory_bytes = 1ull << 30; // buffers all of one client's sessions hold
  std::chrono::seconds max_duration{600}; // a session's length, asked for or run
};

// What one session will cost the agent, worked out from its hello's params before it
// starts (each test registers its own estimate).
struct SessionDemand {
  uint64_t memory_bytes = 0;  // buffers the agent allocates (and for RDMA pins)
  uint64_t message_bytes = 0; // the largest message or write
  // The length the client asked for; none for a test that runs a count of iterations
  // (the agent cuts it at max_duration all the same).
  std::optional<std::chrono::nanoseconds> duration;
};

// What a client already runs.
struct ClientUsage {
  std::size_t sessions = 0;
  uint64_t memory_bytes = 0;
};

// Whether a client running `usage` may start a session costing `demand`. The error names
// the limit and the flag that raises it; its code is kTryAgain for the session count
// (retrying later helps) and kPermission for the rest.
Result<void> check_demand(const ClientLimits& limits, const SessionDemand& demand,
                          const ClientUsage& usage, std::string_view client);

} // namespace fabric::probes
