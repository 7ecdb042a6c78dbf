// The agent's handshakes in progress, on the accept loop's thread (agent.h): connections
// that have not yet become a session, and refused ones that are reading their refusal.
// Only agent.cpp and agent_handshake.cpp include this.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include <poll.h>

#include "common/fd.h"
#include "libs/agent_channel/framing.h"
#include "probes/agent/agent.h"

namespace fabric::probes {

// A hello is small; a bigger first frame is a stranger (HTTP, TLS) on the port.
inline constexpr uint32_t kMaxHelloBytes = 64 * 1024;
// The answer to a challenge is smaller still.
inline constexpr uint32_t kMaxAuthBytes = 4 * 1024;

struct Agent::Pending {
  UniqueFd fd;
  std::string peer;   // "10.0.0.2:40312"
  std::string client; // "10.0.0.2": what the client limits count by
  std::chrono::steady_clock::time_point deadline;
  FrameReader reader{kMaxHelloBytes};
  // Set once the hello is read and the agent, which has a token, has sent its challenge.
  bool awaiting_proof = false;
  std::string hello_text;
  Hello hello;
  std::string agent_nonce;
};

struct Agent::Handshakes {
  enum class Refusal { kBusy, kAccess, kLimits, kOther };

  explicit Handshakes(Agent& agent) : agent_(agent) {}

  // A connection just accepted: refused at once when its address is not allowed, else
  // pending until its hello (and proof) arrive or its deadline passes.
  void accept(UniqueFd fd, const sockaddr_storage& address, socklen_t length);
  // Sends the refusal, logs it and counts it; the client gets a moment to read it.
  void refuse(UniqueFd fd, const std::string& peer, std::string_view code,
              const std::string& message, Refusal kind);
  // Adds the descriptors to watch and lowers `next` to the earliest deadline.
  void watch(std::vector<pollfd>& fds, std::chrono::steady_clock::time_point& next) const;
  // Reads what arrived on the descriptors watch() added (from `first` on), moves complete
  // frames on, and drops what ran out of time.
  void service(const std::vector<pollfd>& fds, std::size_t first, bool any_ready);
  void clear();

private:
  enum class ReadState { kWaiting, kComplete, kClosed };
  // Reads what has arrived of the current frame, never past its end: on a data connection
  // the test's raw bytes follow right behind the hello.
  static Result<ReadState> read_frame(Pending& p);

  struct Lingering {
    UniqueFd fd;
    std::chrono::steady_clock::time_point deadline;
  };

  Agent& agent_;
  std::vector<Pending> pending_;
  std::vector<Lingering> lingering_;
};

} // namespace fabric::probes
