// The control channel: one TCP connection from every rank to rank 0, independent of the
// collective engine, so that it still works when NCCL or MPI is stuck. It carries the
// rendezvous (who is in the job), the small exchanges of a run without MPI (the NCCL id,
// rank descriptions, timings), progress beats for the watchdog, and the order to abort.
//
// Messages are JSON documents framed by probes::Channel (4-byte length, bounded size),
// each with a "type": hello / welcome / refused, gather, result, beat, finished, abort.
// Whatever arrives on the port is untrusted: a peer must say hello within a deadline,
// name a rank in range that nobody took, and the same world size; anything else is
// refused or dropped with a warning, never a crash.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "nccltest/watchdog.h"
#include "probes/agent/channel.h"
#include "probes/agent/tcp_socket.h"

namespace fabric::nccltest {

inline constexpr int kControlProtocol = 1;
// Called when the run must end now: from the I/O thread, with the exit status and why.
using AbortHandler = std::function<void(int exit_code, const std::string& reason)>;

// Rank 0's end.
class ControlServer {
public:
  // Listens on `bind_address` ("" for every address) and `port` (0: any free port) and
  // starts serving. `board` (may be null) receives connections, beats and losses.
  static Result<std::unique_ptr<ControlServer>>
  start(const std::string& bind_address, uint16_t port, int world_size, ProgressBoard* board);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  uint16_t port() const { return port_; }
  // A rank asked for the run to end (it failed); called from the I/O thread.
  void on_abort_request(AbortHandler handler);

  // Waits until every other rank has said hello; the error names those missing.
  Result<void> wait_for_ranks(WatchdogClock::time_point deadline);
  // Every rank's bytes for exchange `seq`, in rank order, sent back to every rank.
  Result<std::vector<std::string>> allgather(uint64_t seq, std::string mine,
                                             WatchdogClock::time_point deadline);
  // Sends rank 0's bytes for exchange `seq` to every rank.
  Result<void> broadcast(uint64_t seq, const std::string& mine);
  // Tells every connected rank to end with `exit_code` (best effort, bounded).
  void send_abort(int exit_code, const std::string& reason);
  // Closes every connection and stops serving.
  void stop();

private:
  struct Peer;
  ControlServer(int world_size, ProgressBoard* board);
  void serve();
  void handle_frame(Peer& peer, const std::string& text);
  void drop(Peer& peer, const std::string& why);
  Result<void> send_to(int rank, const std::string& json);

  int world_size_;
  ProgressBoard* board_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Peer>> peers_;                // accepted, by connection order
  std::vector<Peer*> by_rank_;                              // nullptr until the rank said hello
  std::map<uint64_t, std::map<int, std::string>> gathered_; // seq -> rank -> bytes
  AbortHandler abort_handler_;
};

// Every other rank's end.
class ControlClient {
public:
  // Connects to rank 0 (the first of `candidates` that answers), retrying while nothing
  // listens yet (rank 0's pod not up, its name not in DNS yet) until `deadline`, and says
  // hello. Errors name the address and the last reason.
  static Result<std::unique_ptr<ControlClient>>
  connect(const std::vector<probes::Endpoint>& candidates, int rank, int world_size,
          WatchdogClock::time_point deadline);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // From the I/O thread: rank 0 ordered an abort, or the connection to it was lost before
  // this rank finished.
  void on_abort(AbortHandler handler);

  Result<std::vector<std::string>> allgather(uint64_t seq, const std::string& mine,
                                             WatchdogClock::time_point deadline);
  Result<std::string> broadcast(uint64_t seq, WatchdogClock::time_point deadline);
  // Best effort: a lost beat only makes the report less precise.
  void beat(const Beat& beat);
  // This rank is done: rank 0 no longer waits for it, and a close is no longer a loss.
  void finished();
  // Asks rank 0 to end the run everywhere (this rank failed).
  void request_abort(int exit_code, const std::string& reason);
  void stop();
  std::string peer_name() const { return channel_.peer_name(); }

private:
  explicit ControlClient(probes::Channel channel);
  void serve();
  Result<void> send(const std::string& json);

  probes::Channel channel_;
  std::thread thread_;
  std::mutex mutex_, send_mutex_;
  std::condition_variable changed_;
  bool stopping_ = false, done_ = false, closed_ = false;
  std::string closed_reason_;
  std::map<uint64_t, std::vector<std::string>> results_;
  AbortHandler abort_handler_;
};

// Data travels as hex inside JSON strings (the NCCL id is binary).
std::string to_hex(std::string_view bytes);
Result<std::string> from_hex(std::string_view hex);

} // namespace fabric::nccltest
