#include "libs/agent_channel/framing.h"

#include <arpa/inet.h>

#include <cstring>

namespace fabric::probes {

std::string encode_frame(std::string_view payload) {
  uint32_t length = htonl(static_cast<uint32_t>(payload.size()));
  std::string frame(sizeof length + payload.size(), '\0');
  std::memcpy(frame.data(), &length, sizeof length);
  std::memcpy(frame.data() + sizeof length, payload.data(), payload.size());
  return frame;
}

std::span<char> FrameReader::next() {
  if (header_got_ < sizeof header_) {
    return {header_ + header_got_, sizeof header_ - header_got_};
  }
  return {body_.data() + body_got_, body_.size() - body_got_};
}

bool FrameReader::advance(std::size_t count) {
  if (header_got_ < sizeof header_) {
    header_got_ += count;
    if (header_got_ < sizeof header_) return true;
    uint32_t length;
    std::memcpy(&length, header_, sizeof length);
    announced_ = ntohl(length);
    if (announced_ > max_bytes_) return false;
    body_.assign(announced_, '\0');
    body_got_ = 0;
    return true;
  }
  body_got_ += count;
  return true;
}

std::string FrameReader::take() {
  std::string payload = std::move(body_);
  body_.clear();
  header_got_ = 0;
  body_got_ = 0;
  announced_ = 0;
  return payload;
}

} // namespace fabric::probes
