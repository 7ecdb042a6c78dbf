// Ranks meeting over TCP, without MPI: rank 0 listens on MASTER_PORT, every other rank
// connects to MASTER_ADDR:MASTER_PORT (retrying while rank 0 is not up yet, within a
// bounded wait). The connections then serve as the run's Group, carrying the NCCL id and
// the rank descriptions; collective data never travels here (NCCL carries it).
//
// Under mpirun the same control channel exists for the watchdog alone: rank 0 listens on a
// free port and tells the other ranks its addresses once, over MPI.
#pragma once

#include <memory>

#include "common/result.h"
#include "nccltest/control_channel.h"
#include "nccltest/group.h"
#include "nccltest/launch.h"

namespace fabric::nccltest {

// The control channel as a rank holds it: rank 0 the server, the others a client.
struct ControlPlane {
  std::unique_ptr<ControlServer> server;
  std::unique_ptr<ControlClient> client;
};

class TcpGroup final : public Group {
public:
  // `board` (may be null) follows the ranks for the watchdog. Until begin_run(), each
  // exchange waits at most `rendezvous_timeout` too: the ranks are only describing
  // themselves, and a rank (or a stranger that took a rank) that goes quiet then must not
  // hold the job for longer than the user allowed it to assemble. From begin_run() on,
  // `exchange_timeout` bounds each exchange (the other ranks may be in a long phase).
  static Result<std::unique_ptr<TcpGroup>> join(const Launch& launch, ProgressBoard* board,
                                                std::chrono::milliseconds rendezvous_timeout,
                                                std::chrono::milliseconds exchange_timeout);
  ~TcpGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Result<std::vector<std::string>> allgather(std::string_view mine) override;
  Result<std::string> broadcast(std::string_view mine) override;
  [[noreturn]] void abort(int exit_code, const std::string& reason) override;

  ControlPlane& plane() { return plane_; }
  void begin_run() { running_ = true; }

private:
  TcpGroup(int rank, int size, std::chrono::milliseconds setup_timeout,
           std::chrono::milliseconds exchange_timeout);
  std::chrono::milliseconds exchange_wait() const {
    return running_ ? exchange_timeout_ : setup_timeout_;
  }
  int rank_, size_;
  std::chrono::milliseconds setup_timeout_, exchange_timeout_;
  bool running_ = false; // the main thread's alone, as every exchange is
  uint64_t seq_ = 0;
  ControlPlane plane_;
};

// Under mpirun, with the watchdog on: rank 0 listens on a free port on every address and
// sends the others, over `group`, its host name and addresses; each connects to the first
// address that answers (loopback first when it shares rank 0's host).
Result<ControlPlane> open_watchdog_channel(Group& group, ProgressBoard* board,
                                           std::chrono::milliseconds timeout);

// This host's IPv4 addresses on interfaces that are up, loopback last.
std::vector<std::string> local_addresses();

} // namespace fabric::nccltest
