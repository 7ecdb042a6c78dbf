// The out-of-band channel between a probe client and the agent: whole JSON messages over a
// stream socket, each framed as a 4-byte big-endian length and that many bytes of JSON.
//
// Every receive has a deadline, so a peer that goes away or stops talking turns into a
// timeout error instead of a probe that hangs. Sends are bounded by the same kind of
// deadline (a peer that stops reading fills the socket buffer).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "common/fd.h"
#include "common/result.h"
#include "libs/agent_channel/framing.h"

namespace fabric::probes {

class Channel {
public:
  // Takes a connected stream socket (TCP or a socketpair end).
  explicit Channel(UniqueFd fd, std::string peer_name = "peer");

  // Sends one JSON message (the text must be one complete JSON document).
  Result<void> send(std::string_view json_text,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Receives one message and parses it. A close by the peer is a kSystem error
  // "connection closed by <peer>"; a deadline that passes is kTimeout.
  Result<rapidjson::Document> receive(std::chrono::milliseconds timeout);

  // Raw text of the next message, unparsed.
  Result<std::string> receive_text(std::chrono::milliseconds timeout);

  int fd() const { return fd_.get(); }
  const std::string& peer_name() const { return peer_name_; }
  // Shuts down both directions; a blocked receive on the other end sees the close.
  void close();

private:
  Result<void> write_all(const char* data, std::size_t size,
                         std::chrono::steady_clock::time_point deadline);
  // Reads what has arrived, at most `size` bytes, waiting until something has.
  Result<std::size_t> read_some(char* data, std::size_t size,
                                std::chrono::steady_clock::time_point deadline, bool frame_start);

  UniqueFd fd_;
  std::string peer_name_;
};

// A connected pair of channels (socketpair), for tests and in-process use.
Result<std::pair<Channel, Channel>> make_channel_pair();

} // namespace fabric::probes
