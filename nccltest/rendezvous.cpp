#include "nccltest/rendezvous.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "nccltest/rendezvous_auth.h"

namespace fabric::nccltest {
namespace {

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Rank 0 listens where MASTER_ADDR says, so no other interface (a management network, a
// pod network the job does not use) offers the port. Only when that address is not one of
// this host's (a Service's virtual address) does it listen on every address, and says so.
Result<std::unique_ptr<ControlServer>> listen_at_master_addr(const Launch& launch,
                                                             ProgressBoard* board,
                                                             std::optional<probes::Token> token) {
  auto server =
      ControlServer::start(launch.master_addr, launch.master_port, launch.world_size, board, token);
  if (server.ok() || server.error().sys_errno() != EADDRNOTAVAIL) {
    return std::move(server).context(
        "rank 0 listening for the rendezvous at MASTER_ADDR:" +
        probes::format_endpoint(launch.master_addr, launch.master_port));
  }
  spdlog::warn("rendezvous: MASTER_ADDR {} is not an address of this host; listening on every "
               "address",
               launch.master_addr);
  return ControlServer::start("", launch.master_port, launch.world_size, board, std::move(token))
      .context("rank 0 listening for the rendezvous (MASTER_PORT)");
}

} // namespace

std::vector<std::string> local_addresses() {
  std::vector<std::string> out, loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {"127.0.0.1"};
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    ((a->ifa_flags & IFF_LOOPBACK) ? loopback : out).push_back(text);
  }
  ::freeifaddrs(list);
  out.insert(out.end(), loopback.begin(), loopback.end());
  if (out.empty()) out.push_back("127.0.0.1");
  return out;
}

TcpGroup::TcpGroup(int rank, int size, std::chrono::milliseconds setup_timeout,
                   std::chrono::milliseconds exchange_timeout)
    : rank_(rank), size_(size), setup_timeout_(setup_timeout), exchange_timeout_(exchange_timeout) {
}

TcpGroup::~TcpGroup() {
  if (plane_.client) plane_.client->stop();
  if (plane_.server) plane_.server->stop();
}

Result<std::unique_ptr<TcpGroup>> TcpGroup::join(const Launch& launch, ProgressBoard* board,
                                                 std::chrono::milliseconds rendezvous_timeout,
                                                 std::chrono::milliseconds exchange_timeout) {
  std::unique_ptr<TcpGroup> group(
      new TcpGroup(launch.rank, launch.world_size, rendezvous_timeout, exchange_timeout));
  auto deadline = WatchdogClock::now() + rendezvous_timeout;
  const std::string where = probes::format_endpoint(launch.master_addr, launch.master_port);
  FABRIC_ASSIGN_OR_RETURN(std::optional<probes::Token> token,
                          rendezvous_token(launch.token_file.c_str()));
  if (launch.rank == 0) {
    if (!token) {
      spdlog::warn("rendezvous without a token: whoever reaches port {} first can take a rank "
                   "(give every rank the job's secret in {})",
                   launch.master_port, kRendezvousTokenEnv);
    }
    FABRIC_ASSIGN_OR_RETURN(group->plane_.server,
                            listen_at_master_addr(launch, board, std::move(token)));
    spdlog::info("rendezvous: rank 0 waiting for {} ranks on port {}", launch.world_size - 1,
                 launch.master_port);
    FABRIC_TRY(group->plane_.server->wait_for_ranks(deadline));
  } else {
    FABRIC_ASSIGN_OR_RETURN(
        group->plane_.client,
        ControlClient::connect({{launch.master_addr, launch.master_port}}, launch.rank,
                               launch.world_size, deadline, token ? &*token : nullptr)
            .context("rank " + std::to_string(launch.rank) + " joining the rendezvous at " + where +
                     " (MASTER_ADDR:MASTER_PORT)"));
  }
  return group;
}

Result<std::vector<std::string>> TcpGroup::allgather(std::string_view mine) {
  const uint64_t seq = ++seq_;
  auto deadline = WatchdogClock::now() + exchange_wait();
  if (plane_.server) return plane_.server->allgather(seq, std::string(mine), deadline);
  return plane_.client->allgather(seq, std::string(mine), deadline);
}

Result<std::string> TcpGroup::broadcast(std::string_view mine) {
  const uint64_t seq = ++seq_;
  if (plane_.server) {
    FABRIC_TRY(plane_.server->broadcast(seq, std::string(mine)));
    return std::string(mine);
  }
  return plane_.client->broadcast(seq, WatchdogClock::now() + exchange_wait());
}

[[noreturn]] void TcpGroup::abort(int exit_code, const std::string& reason) {
  if (plane_.server) plane_.server->send_abort(exit_code, reason);
  if (plane_.client) plane_.client->request_abort(exit_code, reason);
  std::fflush(stdout);
  ::_exit(exit_code);
}

Result<ControlPlane> open_watchdog_channel(Group& group, ProgressBoard* board,
                                           std::chrono::milliseconds timeout) {
  ControlPlane plane;
  std::string announcement;
  if (group.rank() == 0) {
    // A token of the run's own, told to the ranks over MPI with the port: a stranger who
    // finds the port cannot join or abort the run.
    FABRIC_ASSIGN_OR_RETURN(probes::Token token, random_rendezvous_token());
    announcement = host_name() + " " + std::string(token.secret());
    FABRIC_ASSIGN_OR_RETURN(plane.server,
                            ControlServer::start("", 0, group.size(), board, std::move(token))
                                .context("opening the watchdog's channel"));
    announcement += " " + std::to_string(plane.server->port());
    for (const std::string& a : local_addresses())
      announcement += " " + a;
  }
  FABRIC_ASSIGN_OR_RETURN(announcement, group.broadcast(announcement));
  auto deadline = WatchdogClock::now() + timeout;
  if (group.rank() != 0) {
    std::istringstream words(announcement);
    std::string host, secret;
    unsigned port = 0;
    words >> host >> secret >> port;
    auto token = probes::Token::from_text(secret, "rank 0's announcement");
    crypto::wipe(secret);
    crypto::wipe(announcement);
    if (!token.ok()) return std::move(token).error().with_context("joining the watchdog channel");
    std::vector<probes::Endpoint> candidates;
    std::string address;
    while (words >> address)
      candidates.push_back({address, static_cast<uint16_t>(port)});
    if (host == host_name())
      candidates.insert(candidates.begin(), {"127.0.0.1", static_cast<uint16_t>(port)});
    FABRIC_ASSIGN_OR_RETURN(plane.client, ControlClient::connect(candidates, group.rank(),
                                                                 group.size(), deadline, &*token)
                                              .context("connecting to rank 0's watchdog channel"));
  } else {
    FABRIC_TRY(plane.server->wait_for_ranks(deadline));
  }
  return plane;
}

} // namespace fabric::nccltest
