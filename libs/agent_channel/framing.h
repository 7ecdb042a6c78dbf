// The agent protocol's framing: every message is a 4-byte big-endian length and that many
// bytes of JSON. One encoder and one incremental reader serve the channel, the agent's
// handshake and the data connections' attach hello.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fabric::probes {

// Frames larger than this are refused on both sides: a garbage length from a stranger on
// the port must not make us allocate gigabytes.
inline constexpr uint32_t kMaxFrameBytes = 1u << 20;

// The header and the payload, ready to send. The payload must fit kMaxFrameBytes.
std::string encode_frame(std::string_view payload);

// Assembles one frame from bytes as they arrive. It never asks for a byte past the end of
// its frame: on a data connection the test's raw bytes follow the hello.
class FrameReader {
public:
  explicit FrameReader(uint32_t max_bytes = kMaxFrameBytes) : max_bytes_(max_bytes) {}

  // Where the next bytes go: at most the rest of the header, then the rest of the
  // payload. Empty once the frame is complete.
  std::span<char> next();
  // Accounts for `count` bytes written into next(). False when the header, now whole,
  // announces more than the limit (announced() says how much); the frame is then dead.
  bool advance(std::size_t count);

  bool started() const { return header_got_ > 0; }
  bool complete() const { return header_got_ == sizeof header_ && body_got_ == body_.size(); }
  // The length the header announced; 0 until the header is whole.
  uint32_t announced() const { return announced_; }
  uint32_t limit() const { return max_bytes_; }
  // The payload of a complete frame; the reader starts over for the next one.
  std::string take();

private:
  uint32_t max_bytes_;
  char header_[4] = {};
  std::size_t header_got_ = 0;
  uint32_t announced_ = 0;
  std::string body_;
  std::size_t body_got_ = 0;
};

} // namespace fabric::probes
