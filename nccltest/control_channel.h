// The control channel: one TCP connection from every rank to rank 0, independent of the
// collective engine, so that it still works when NCCL or MPI is stuck. It carries the
// rendezvous (who is in the job), the small exchanges of a run without MPI (the NCCL id,
// rank descriptions, timings), progress beats for the watchdog, and the order to abort.
//
// Messages are JSON documents framed by probes::Channel (4-byte length, bounded size),
// each with a "type": hello / challenge / proof / welcome / refused, gather, result, beat,
// finished, abort. Whatever arrives on the port is untrusted: a peer must say hello within
// a deadline, name a rank in range that nobody took, and the same world size, and, when
// the job has a token (the launcher's shared secret), prove that it knows it:
//   rank -> hello {rank, world_size, protocol, nonce}
//   rank 0 -> challenge {nonce}
//   rank -> proof {proof: HMAC-SHA256(token, "fabric-nccltest/2 rank" | rank 0's nonce |
//                  the rank's nonce | the hello as framed)}
//   rank 0 -> welcome {proof: the same over "fabric-nccltest/2 rank 0"}
// (the probe agent's handshake, libs/agent_channel/auth.h, under the rendezvous' own name)
// so neither side sends the token, every proof is single-use, and a rank knows it reached
// its job's rank 0. Anything else is refused or dropped with a warning, never a crash.
//
// Rank 0 reads every connection without blocking, a frame at a time as its bytes come, so
// no connection holds up another; dropped connections are closed at once; at most
// kMaxUnjoined connections wait to introduce themselves (the oldest goes for a new one);
// out of descriptors, it stops accepting for a moment instead of spinning.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/channel.h"
#include "libs/agent_channel/tcp_socket.h"
#include "nccltest/watchdog.h"

namespace fabric::nccltest {

inline constexpr int kControlProtocol = 2;
inline constexpr std::size_t kMaxUnjoined = 64;
// Called when the run must end now: from the I/O thread, with the exit status and why.
using AbortHandler = std::function<void(int exit_code, const std::string& reason)>;

// Rank 0's end.
class ControlServer {
public:
  // Listens on `bind_address` ("" for every address) and `port` (0: any free port) and
  // starts serving. `board` (may be null) receives connections, beats and losses.
  // With `token`, a rank must prove it knows it before it is welcomed.
  static Result<std::unique_ptr<ControlServer>>
  start(const std::string& bind_address, uint16_t port, int world_size, ProgressBoard* board,
        std::optional<probes::Token> token = std::nullopt);
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
  ControlServer(int world_size, ProgressBoard* board, std::optional<probes::Token> token);
  void serve();
  void accept_new();
  void read_frames(Peer& peer);
  void handle_frame(Peer& peer, const std::string& text);
  void handle_hello(Peer& peer, const rapidjson::Value& doc, const std::string& text);
  void handle_proof(Peer& peer, const rapidjson::Value& doc);
  // Takes `rank` for `peer`; the refusal when someone holds it.
  std::string admit(Peer& peer, int rank);
  void reply(Peer& peer, const std::string& json);
  void drop(Peer& peer, const std::string& why);
  void forget_dropped();
  Result<void> send_to(int rank, const std::string& json);

  int world_size_;
  ProgressBoard* board_;
  std::optional<probes::Token> token_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::optional<WatchdogClock::time_point> accept_paused_until_; // I/O thread only
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Peer>> peers_;                // open connections, by connection order
  std::vector<std::shared_ptr<Peer>> by_rank_;              // null until the rank joined
  std::map<uint64_t, std::map<int, std::string>> gathered_; // seq -> rank -> bytes
  AbortHandler abort_handler_;
};

// Every other rank's end.
class ControlClient {
public:
  // Connects to rank 0 (the first of `candidates` that answers), retrying while nothing
  // listens yet (rank 0's pod not up, its name not in DNS yet) until `deadline`, and says
  // hello. Errors name the address and the last reason.
  // With `token`, proves it to rank 0 and accepts only a rank 0 that proves it back.
  static Result<std::unique_ptr<ControlClient>>
  connect(const std::vector<probes::Endpoint>& candidates, int rank, int world_size,
          WatchdogClock::time_point deadline, const probes::Token* token = nullptr);
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
