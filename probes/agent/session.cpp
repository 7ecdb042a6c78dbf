#include "probes/agent/session.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "libs/agent_channel/tcp_socket.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", std::chrono::duration<double>(timeout).count());
  return text;
}

// Connect errors in the user's terms: ECONNREFUSED means the host is there but no agent.
Error explain_connect_error(Error error, const std::string& where) {
  if (error.sys_errno() == ECONNREFUSED) {
    return Error(ErrorCode::kSystem, "connecting to " + where,
                 "no fabric-probe agent listening on " + where +
                     " \u2014 start `fabric-probe server`")
        .with_hint("run `fabric-probe server` on that host (or check --port)");
  }
  return error;
}

// The agent's answer to what this client just sent, with errors in the user's terms.
Result<rapidjson::Document> receive_answer(Channel& channel, const std::string& where,
                                           std::chrono::milliseconds timeout) {
  auto answer = channel.receive(timeout);
  if (answer.ok()) return answer;
  Error e = std::move(answer).error();
  if (e.code() == ErrorCode::kTimeout) {
    return Error(ErrorCode::kTimeout, "handshake with " + where,
                 "no answer to the hello within " + seconds_text(timeout) +
                     "; is a fabric-probe agent listening there?");
  }
  if (e.code() == ErrorCode::kDecode) {
    return std::move(e)
        .with_context("handshake with " + where)
        .with_hint("the program on that port is not a fabric-probe agent");
  }
  return std::move(e).with_context("handshake with " + where);
}

// Answers the agent's challenge and checks its proof in the welcome.
Result<Welcome> authenticate(Channel& channel, const rapidjson::Value& challenge,
                             const std::string& where, const std::string& hello,
                             const std::string& client_nonce, const Token* token,
                             std::chrono::milliseconds timeout) {
  const std::string step = "handshake with " + where;
  FABRIC_ASSIGN_OR_RETURN(std::string agent_nonce, parse_challenge(challenge).context(step));
  if (token == nullptr) {
    // Tells the agent why this client goes away, for its log.
    (void)channel.send(
        make_error_message(error_code_name(ErrorCode::kPermission), "the client has no token"),
        timeout);
    return Error(ErrorCode::kPermission, step, "the agent requires a token")
        .with_hint(std::string("give --token-file FILE, or set ") + kTokenFileEnv +
                   ", naming a file that holds the agent's token");
  }
  FABRIC_ASSIGN_OR_RETURN(
      std::string proof,
      make_proof(*token, ProofSide::kClient, agent_nonce, client_nonce, hello).context(step));
  FABRIC_TRY(channel.send(make_auth(proof), timeout).context(step));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document answer, receive_answer(channel, where, timeout));
  FABRIC_ASSIGN_OR_RETURN(Welcome welcome, parse_welcome(answer, where));
  if (!check_proof(*token, ProofSide::kAgent, agent_nonce, client_nonce, hello, welcome.proof)) {
    return Error(ErrorCode::kPermission, step,
                 "the agent accepted this client but could not prove that it holds the token "
                 "in " +
                     token->source() + "; is something else answering on its port?");
  }
  return welcome;
}

} // namespace

Result<Session> connect_session(const std::string& host, uint16_t port, std::string_view test,
                                std::string_view params_json, std::chrono::milliseconds timeout,
                                const Token* token) {
  const std::string where = format_endpoint(host, port);
  FABRIC_ASSIGN_OR_RETURN(std::string client_nonce, make_nonce());
  FABRIC_ASSIGN_OR_RETURN(std::string hello, make_hello(test, params_json, client_nonce));
  auto fd = connect_tcp(host, port, timeout);
  if (!fd.ok()) return explain_connect_error(std::move(fd).error(), where);
  // The channel writes a frame's header and body separately: without TCP_NODELAY, Nagle
  // and delayed ACKs would add tens of milliseconds to every message.
  FABRIC_TRY(set_nodelay(fd->get()));
  Channel channel(std::move(*fd), "agent at " + where);
  FABRIC_TRY(channel.send(hello, timeout).context("sending hello to " + where));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document answer, receive_answer(channel, where, timeout));
  Welcome welcome;
  if (message_type(answer) == kMsgChallenge) {
    FABRIC_ASSIGN_OR_RETURN(
        welcome, authenticate(channel, answer, where, hello, client_nonce, token, timeout));
  } else {
    FABRIC_ASSIGN_OR_RETURN(welcome, parse_welcome(answer, where));
  }
  return Session{std::move(channel), std::move(welcome), where};
}

Result<Channel> open_session(const std::string& host, uint16_t port, std::string_view test,
                             std::string_view params_json, std::chrono::milliseconds timeout,
                             const Token* token) {
  FABRIC_ASSIGN_OR_RETURN(Session session,
                          connect_session(host, port, test, params_json, timeout, token));
  return std::move(session.channel);
}

Result<void> send_frame(int fd, std::string_view json_text, std::chrono::milliseconds timeout) {
  std::string frame = encode_frame(json_text);
  auto deadline = Clock::now() + timeout;
  std::size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Error(ErrorCode::kTimeout, "sending a message");
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
        return Error::from_errno(errno, "poll");
      }
      continue;
    }
    return Error::from_errno(errno, "send");
  }
  return Ok();
}

Result<UniqueFd> open_data_connection(const std::string& host, uint16_t port,
                                      std::string_view cookie, std::size_t stream,
                                      std::chrono::milliseconds timeout) {
  const std::string where = format_endpoint(host, port);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("cookie");
  w.String(cookie.data(), static_cast<rapidjson::SizeType>(cookie.size()));
  w.Key("stream");
  w.Uint64(stream);
  w.EndObject();
  FABRIC_ASSIGN_OR_RETURN(std::string hello, make_hello(kAttachTest, buffer.GetString()));
  auto fd = connect_tcp(host, port, timeout);
  if (!fd.ok()) {
    return explain_connect_error(std::move(fd).error(), where)
        .with_context("opening data connection " + std::to_string(stream));
  }
  FABRIC_TRY(send_frame(fd->get(), hello, timeout)
                 .context("opening data connection " + std::to_string(stream) + " to " + where));
  return std::move(*fd);
}

} // namespace fabric::probes
