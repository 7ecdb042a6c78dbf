#include "libs/agent_channel/channel.h"

#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/json.h"
#include "libs/agent_channel/tcp_socket.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events`, or the deadline passes.
Result<void> wait_ready(int fd, short events, Clock::time_point deadline, const std::string& peer,
                        const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (n > 0) return Ok();
    if (n == 0) {
      return Error(ErrorCode::kTimeout, what, "no progress from " + peer + " before the deadline");
    }
    if (errno != EINTR) return Error::from_errno(errno, "poll", peer);
  }
}

} // namespace

Channel::Channel(UniqueFd fd, std::string peer_name)
    : fd_(std::move(fd)), peer_name_(std::move(peer_name)) {}

void Channel::close() {
  if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
}

Result<void> Channel::write_all(const char* data, std::size_t size, Clock::time_point deadline) {
  while (size > 0) {
    // MSG_NOSIGNAL: a vanished peer is an EPIPE error, not a SIGPIPE that kills the agent.
    ssize_t n = ::send(fd_.get(), data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      FABRIC_TRY(wait_ready(fd_.get(), POLLOUT, deadline, peer_name_, "sending a message"));
      continue;
    }
    return Error::from_errno(errno, "send", "to " + peer_name_);
  }
  return Ok();
}

Result<std::size_t> Channel::read_some(char* data, std::size_t size, Clock::time_point deadline,
                                       bool frame_start) {
  for (;;) {
    ssize_t n = ::recv(fd_.get(), data, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) {
      return Error(ErrorCode::kSystem, "receiving a message",
                   "connection closed by " + peer_name_ +
                       (frame_start ? "" : " in the middle of a message"));
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      FABRIC_TRY(wait_ready(fd_.get(), POLLIN, deadline, peer_name_, "receiving a message"));
      continue;
    }
    return Error::from_errno(errno, "recv", "from " + peer_name_);
  }
}

Result<void> Channel::send(std::string_view json_text, std::chrono::milliseconds timeout) {
  if (json_text.size() > kMaxFrameBytes) {
    return Error(ErrorCode::kInternal, "sending a message",
                 "message of " + std::to_string(json_text.size()) + " bytes exceeds the limit");
  }
  std::string frame = encode_frame(json_text);
  return write_all(frame.data(), frame.size(), Clock::now() + timeout);
}

Result<std::string> Channel::receive_text(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  FrameReader reader;
  while (!reader.complete()) {
    std::span<char> into = reader.next();
    FABRIC_ASSIGN_OR_RETURN(std::size_t got,
                            read_some(into.data(), into.size(), deadline, !reader.started()));
    if (!reader.advance(got)) {
      return Error(ErrorCode::kDecode, "receiving a message",
                   "frame of " + std::to_string(reader.announced()) + " bytes from " + peer_name_ +
                       " exceeds the limit; is the peer a fabric-probe agent?");
    }
  }
  return reader.take();
}

Result<rapidjson::Document> Channel::receive(std::chrono::milliseconds timeout) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, receive_text(timeout));
  return json::parse(text, "message from " + peer_name_);
}

Result<std::pair<Channel, Channel>> make_channel_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Error::from_errno(errno, "socketpair");
  }
  return std::pair<Channel, Channel>{Channel(UniqueFd(fds[0]), "socketpair end 0"),
                                     Channel(UniqueFd(fds[1]), "socketpair end 1")};
}

} // namespace fabric::probes
