// The agent's side of the handshake (protocol.h): reading hellos and proofs without
// blocking, the access checks, the refusals, and the hand-over to a session.
#include "probes/agent/agent_handshake.h"

#include <cerrno>
#include <sys/socket.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/json.h"
#include "libs/agent_channel/tcp_socket.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long a refused client gets to read the refusal before its socket is closed.
constexpr auto kLingerTime = 2s;
// Connections still in their handshake; past this many, new ones are closed at once.
constexpr std::size_t kMaxPendingHandshakes = 256;

// Sends a small frame on a socket that has sent nothing yet: its send buffer is empty, so
// the frame goes out whole or not at all.
bool send_small_frame(int fd, std::string_view text) {
  std::string frame = encode_frame(text);
  ssize_t n = ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n == static_cast<ssize_t>(frame.size());
}

std::string permission() {
  return std::string(error_code_name(ErrorCode::kPermission));
}

} // namespace

// --- Handshakes: the connections and their refusals ---

Result<Agent::Handshakes::ReadState> Agent::Handshakes::read_frame(Pending& p) {
  while (!p.reader.complete()) {
    std::span<char> into = p.reader.next();
    ssize_t n = ::recv(p.fd.get(), into.data(), into.size(), MSG_DONTWAIT);
    if (n == 0) return ReadState::kClosed;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadState::kWaiting;
      return Error::from_errno(errno, "recv", "from " + p.peer);
    }
    if (!p.reader.advance(static_cast<std::size_t>(n))) {
      return Error(ErrorCode::kDecode, "handshake",
                   std::string(p.awaiting_proof ? "answer to the challenge" : "first frame") +
                       " of " + std::to_string(p.reader.announced()) + " bytes from " + p.peer +
                       " exceeds the limit; the peer is not a fabric-probe client");
    }
  }
  return ReadState::kComplete;
}

void Agent::Handshakes::accept(UniqueFd fd, const sockaddr_storage& address, socklen_t length) {
  const auto* sa = reinterpret_cast<const sockaddr*>(&address);
  Pending p;
  p.fd = std::move(fd);
  // Control messages are small and answered at once (see connect_session()).
  (void)set_nodelay(p.fd.get());
  p.peer = address_text(sa, length);
  p.client = host_text(sa, length);
  p.deadline = Clock::now() + agent_.options_.handshake_timeout;
  if (!allowed(agent_.options_.allow, sa, length)) {
    return refuse(std::move(p.fd), p.peer, permission(),
                  "the agent on " + agent_.options_.hostname + " does not accept clients from " +
                      p.client + " (its --allow list)",
                  Refusal::kAccess);
  }
  if (pending_.size() >= kMaxPendingHandshakes) {
    // Told why, not reset: a real client learns that silent connections fill the agent.
    const std::string why = "the agent on " + agent_.options_.hostname +
                            " is busy: " + std::to_string(pending_.size()) +
                            " connections are still introducing themselves; try again";
    if (lingering_.size() < kMaxPendingHandshakes)
      return refuse(std::move(p.fd), p.peer, kErrorBusy, why, Refusal::kBusy);
    // Too many refusals draining already: this one is told and closed at once.
    (void)send_small_frame(p.fd.get(), make_error_message(kErrorBusy, why));
    std::lock_guard lock(agent_.mutex_);
    ++agent_.counters_.refused_busy;
    return;
  }
  pending_.push_back(std::move(p));
}

void Agent::Handshakes::refuse(UniqueFd fd, const std::string& peer, std::string_view code,
                               const std::string& message, Refusal kind) {
  spdlog::info("session from {} outcome=refused ({}): {}", peer, code, message);
  (void)send_small_frame(fd.get(), make_error_message(code, message));
  // Half-close and drain what the client still sends, so that its unread hello does not
  // turn our close into a reset that could destroy the refusal before it is read.
  ::shutdown(fd.get(), SHUT_WR);
  lingering_.push_back({std::move(fd), Clock::now() + kLingerTime});
  std::lock_guard lock(agent_.mutex_);
  switch (kind) {
  case Refusal::kBusy: ++agent_.counters_.refused_busy; break;
  case Refusal::kAccess: ++agent_.counters_.refused_access; break;
  case Refusal::kLimits: ++agent_.counters_.refused_limits; break;
  case Refusal::kOther: ++agent_.counters_.refused_other; break;
  }
}

void Agent::Handshakes::watch(std::vector<pollfd>& fds, Clock::time_point& next) const {
  for (const auto& p : pending_) {
    fds.push_back({p.fd.get(), POLLIN, 0});
    next = std::min(next, p.deadline);
  }
  for (const auto& l : lingering_) {
    fds.push_back({l.fd.get(), POLLIN, 0});
    next = std::min(next, l.deadline);
  }
}

void Agent::Handshakes::service(const std::vector<pollfd>& fds, std::size_t first, bool any_ready) {
  auto now = Clock::now();
  // Refusals made below join lingering_ after the ones watched in this round.
  const std::size_t watched_lingering = lingering_.size();
  std::vector<Pending> still_pending;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (any_ready && fds[first + i].revents != 0) {
      auto state = read_frame(p);
      if (!state.ok()) {
        if (state.error().code() == ErrorCode::kDecode) {
          refuse(std::move(p.fd), p.peer, kErrorBadRequest, state.error().message(),
                 Refusal::kOther);
        } else {
          spdlog::info("session from {} outcome=error: {}", p.peer, state.error().message());
        }
        continue;
      }
      if (*state == ReadState::kClosed) {
        spdlog::debug("connection from {} closed during its handshake", p.peer);
        continue;
      }
      if (*state == ReadState::kComplete) {
        if (agent_.on_frame(p, *this)) still_pending.push_back(std::move(p));
        continue;
      }
    }
    if (now >= p.deadline) {
      spdlog::info("session from {} outcome=dropped: no {} within {:.1f}s", p.peer,
                   p.awaiting_proof ? "answer to the challenge" : "hello",
                   std::chrono::duration<double>(agent_.options_.handshake_timeout).count());
      std::lock_guard lock(agent_.mutex_);
      ++agent_.counters_.handshake_timeouts;
      continue;
    }
    still_pending.push_back(std::move(p));
  }
  pending_ = std::move(still_pending);

  // watch() put the lingering connections last.
  const std::size_t base = fds.size() - watched_lingering;
  std::vector<Lingering> still_lingering;
  for (std::size_t i = 0; i < lingering_.size(); ++i) {
    Lingering& l = lingering_[i];
    bool open = now < l.deadline;
    if (open && any_ready && i < watched_lingering && fds[base + i].revents != 0) {
      char drain[4096];
      for (;;) {
        ssize_t got = ::recv(l.fd.get(), drain, sizeof drain, MSG_DONTWAIT);
        if (got > 0) continue;
        if (got < 0 && errno == EINTR) continue;
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) open = false;
        break;
      }
    }
    if (open) still_lingering.push_back(std::move(l));
  }
  lingering_ = std::move(still_lingering);
}

void Agent::Handshakes::clear() {
  pending_.clear();
  lingering_.clear();
}

// --- the steps ---

bool Agent::on_frame(Pending& p, Handshakes& h) {
  std::string text = p.reader.take();
  return p.awaiting_proof ? on_proof(p, std::move(text), h) : on_hello(p, std::move(text), h);
}

bool Agent::on_hello(Pending& p, std::string text, Handshakes& h) {
  using Refusal = Handshakes::Refusal;
  auto doc = json::parse(text, "hello from " + p.peer);
  if (!doc.ok()) {
    h.refuse(std::move(p.fd), p.peer, kErrorBadRequest,
             "expected a fabric-probe hello message: " + doc.error().message(), Refusal::kOther);
    return false;
  }
  auto hello = parse_hello(*doc);
  if (!hello.ok()) {
    h.refuse(std::move(p.fd), p.peer, wire_code_for(hello.error()), hello.error().message(),
             Refusal::kOther);
    return false;
  }
  if (hello->test == kAttachTest) {
    auto attached = attach_stream(hello->params_json, std::move(p.fd));
    if (!attached.ok()) {
      spdlog::info("data connection from {}: {}", p.peer, attached.error().message());
    }
    return false;
  }
  p.hello = std::move(*hello);
  if (!options_.token) {
    admit(p, "", h);
    return false;
  }
  if (p.hello.nonce.empty()) {
    h.refuse(std::move(p.fd), p.peer, permission(),
             "the agent on " + options_.hostname + " requires a token; the hello has no nonce",
             Refusal::kAccess);
    return false;
  }
  auto nonce = make_nonce();
  if (!nonce.ok() || !send_small_frame(p.fd.get(), make_challenge(*nonce))) {
    spdlog::warn("session from {} outcome=error: could not send the challenge", p.peer);
    return false;
  }
  p.awaiting_proof = true;
  p.agent_nonce = std::move(*nonce);
  p.hello_text = std::move(text);
  p.reader = FrameReader(kMaxAuthBytes);
  return true;
}

bool Agent::on_proof(Pending& p, std::string text, Handshakes& h) {
  using Refusal = Handshakes::Refusal;
  auto doc = json::parse(text, "answer to the challenge from " + p.peer);
  if (doc.ok() && message_type(*doc) == "error") {
    // A client without the token says so and goes; it knows why.
    Error gave_up = error_from_message(*doc, "client " + p.peer);
    spdlog::info("session from {} outcome=refused ({}): the client gave up: {}", p.peer,
                 permission(), gave_up.message());
    std::lock_guard lock(mutex_);
    ++counters_.refused_access;
    return false;
  }
  Result<std::string> proof = doc.ok() ? parse_auth(*doc) : Result<std::string>(doc.error());
  if (!proof.ok()) {
    h.refuse(std::move(p.fd), p.peer, kErrorBadRequest, proof.error().message(), Refusal::kOther);
    return false;
  }
  const Token& token = *options_.token;
  if (!check_proof(token, ProofSide::kClient, p.agent_nonce, p.hello.nonce, p.hello_text, *proof)) {
    h.refuse(std::move(p.fd), p.peer, permission(),
             "authentication failed: the client's token is not the one the agent on " +
                 options_.hostname + " holds",
             Refusal::kAccess);
    return false;
  }
  auto welcome_proof =
      make_proof(token, ProofSide::kAgent, p.agent_nonce, p.hello.nonce, p.hello_text);
  if (!welcome_proof.ok()) {
    h.refuse(std::move(p.fd), p.peer, permission(), welcome_proof.error().message(),
             Refusal::kOther);
    return false;
  }
  admit(p, std::move(*welcome_proof), h);
  return false;
}

void Agent::admit(Pending& p, std::string welcome_proof, Handshakes& h) {
  using Refusal = Handshakes::Refusal;
  auto names = test_names();
  if (std::find(names.begin(), names.end(), p.hello.test) == names.end()) {
    std::string list;
    for (const auto& n : names)
      list += (list.empty() ? "" : ", ") + n;
    return h.refuse(std::move(p.fd), p.peer, kErrorUnknownTest,
                    "the agent on " + options_.hostname + " has no test '" + p.hello.test +
                        "' (it serves: " + list + ")",
                    Refusal::kOther);
  }
  std::size_t running = active_sessions();
  if (running >= options_.max_sessions) {
    return h.refuse(std::move(p.fd), p.peer, kErrorBusy,
                    "the agent on " + options_.hostname + " is busy: " + std::to_string(running) +
                        " sessions running (--max-sessions " +
                        std::to_string(options_.max_sessions) + ")",
                    Refusal::kBusy);
  }
  auto params = json::parse(p.hello.params_json, "params");
  Result<SessionDemand> demand =
      params.ok() ? estimate(p.hello.test, *params) : Result<SessionDemand>(params.error());
  if (!demand.ok()) {
    return h.refuse(std::move(p.fd), p.peer, error_code_name(demand.error().code()),
                    demand.error().message(), Refusal::kOther);
  }
  auto within = check_demand(options_.limits, *demand, usage_of(p.client), p.client);
  if (!within.ok()) {
    return h.refuse(std::move(p.fd), p.peer, error_code_name(within.error().code()),
                    "the agent on " + options_.hostname + " refuses: " + within.error().detail(),
                    Refusal::kLimits);
  }
  start_session(p, *demand, std::move(welcome_proof));
}

Result<SessionDemand> Agent::estimate(const std::string& test,
                                      const rapidjson::Value& params) const {
  auto entry = std::find_if(tests_.begin(), tests_.end(),
                            [&](const TestEntry& e) { return e.name == test; });
  if (entry == tests_.end() || !entry->estimate) return SessionDemand{};
  return entry->estimate(params);
}

} // namespace fabric::probes
