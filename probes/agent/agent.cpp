#include "probes/agent/agent.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/build_info.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/units.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/agent_handshake.h"
#include "probes/agent/delegation_guard.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Sending the error that ends a failed session.
constexpr auto kReplyTimeout = 2s;
// Out of descriptors: how long the listener rests before accept() is tried again.
constexpr auto kAcceptRest = 100ms;

std::string random_cookie() {
  std::random_device device;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    uint32_t word = device();
    for (int nibble = 0; nibble < 4; ++nibble) {
      out += kHex[word & 0xf];
      word >>= 4;
    }
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

struct Agent::SessionRecord {
  std::unique_ptr<AgentSession> session;
  std::thread thread;
  Clock::time_point started;
  std::string client;        // the client's address: its limits count by it
  uint64_t memory_bytes = 0; // SessionDemand::memory_bytes
  bool done = false;         // guarded by Agent::mutex_
  bool cut = false;          // guarded by Agent::mutex_: ran past the clients' max_duration
};

// --- AgentSession ---

AgentSession::AgentSession(Agent& agent, Channel channel, std::string peer, std::string test)
    : agent_(agent), channel_(std::move(channel)), peer_(std::move(peer)), test_(std::move(test)) {}

AgentSession::~AgentSession() {
  if (!cookie_.empty()) agent_.unregister_cookie(cookie_);
}

std::string AgentSession::accept_streams(std::size_t count) {
  if (!cookie_.empty()) agent_.unregister_cookie(cookie_);
  {
    std::lock_guard lock(mutex_);
    streams_.clear();
    streams_.resize(count);
    attached_ = 0;
  }
  cookie_ = agent_.register_cookie(*this);
  return cookie_;
}

bool AgentSession::attach(std::size_t stream, UniqueFd fd) {
  std::lock_guard lock(mutex_);
  if (aborted_ || stream >= streams_.size() || streams_[stream]) return false;
  streams_[stream] = std::move(fd);
  ++attached_;
  arrived_.notify_all();
  return true;
}

Result<std::vector<int>> AgentSession::wait_streams(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  bool complete = arrived_.wait_for(
      lock, timeout, [&] { return aborted_ || agent_.stop_ || attached_ == streams_.size(); });
  if (aborted_ || agent_.stop_) {
    return Error(ErrorCode::kSystem, "waiting for data connections", "the agent is stopping");
  }
  if (!complete) {
    return Error(ErrorCode::kTimeout, "waiting for data connections",
                 std::to_string(attached_) + " of " + std::to_string(streams_.size()) +
                     " arrived from " + peer_ + " in time")
        .with_hint("new connections to the agent's port may be blocked by a firewall");
  }
  std::vector<int> fds;
  for (const auto& fd : streams_)
    fds.push_back(fd.get());
  lock.unlock();
  agent_.unregister_cookie(cookie_);
  return fds;
}

bool AgentSession::stop_requested() const {
  return agent_.stop_.load();
}

void AgentSession::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  channel_.close();
  for (const auto& fd : streams_) {
    if (fd) ::shutdown(fd.get(), SHUT_RDWR);
  }
  arrived_.notify_all();
}

// --- Agent ---

Agent::Agent(AgentOptions options) : options_(std::move(options)) {
  if (options_.agent_text.empty()) options_.agent_text = first_line(version_text("fabric-probe"));
  if (options_.hostname.empty()) options_.hostname = host_name();
  // Another agent checks with it that an agent answers here before it runs a test
  // against this host (delegation_guard.h).
  register_test(kPingTest, [](Channel& channel, const rapidjson::Value&) {
    return channel.send(R"({"type":"result"})");
  });
  // A delegated test runs its client side here: it costs this agent what the test costs.
  register_session_test(
      kRunTest,
      [this](AgentSession& session, const rapidjson::Value& params) {
        return run_delegated(session, params);
      },
      [this](const rapidjson::Value& params) -> Result<SessionDemand> {
        FABRIC_ASSIGN_OR_RETURN(std::string test, json::get_string(params, "params", "test"));
        rapidjson::Value empty(rapidjson::kObjectType);
        const rapidjson::Value* inner = &empty;
        if (params.HasMember("params")) {
          FABRIC_ASSIGN_OR_RETURN(inner, json::get_object(params, "params", "params"));
        }
        return estimate(test, *inner);
      });
}

Agent::~Agent() {
  request_stop();
  {
    std::lock_guard lock(mutex_);
    for (auto& record : sessions_) {
      if (!record->done) record->session->abort();
    }
  }
  reap_finished(/*wait_all=*/true);
}

void Agent::register_test(std::string name, TestHandler handler, DemandEstimate estimate) {
  register_session_test(
      std::move(name),
      [handler = std::move(handler)](AgentSession& session, const rapidjson::Value& params) {
        return handler(session.channel(), params);
      },
      std::move(estimate));
}

void Agent::register_session_test(std::string name, SessionHandler handler,
                                  DemandEstimate estimate) {
  for (auto& entry : tests_) {
    if (entry.name == name) {
      entry.handler = std::move(handler);
      entry.estimate = std::move(estimate);
      return;
    }
  }
  tests_.push_back({std::move(name), std::move(handler), std::move(estimate)});
}

void Agent::register_runner(std::string name, ClientRunner runner) {
  for (auto& [n, r] : runners_) {
    if (n == name) {
      r = std::move(runner);
      return;
    }
  }
  runners_.emplace_back(std::move(name), std::move(runner));
}

std::vector<std::string> Agent::test_names() const {
  std::vector<std::string> names;
  for (const auto& entry : tests_)
    names.push_back(entry.name);
  return names;
}

Result<void> Agent::listen() {
  if (!wake_read_) {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe2");
    wake_read_.reset(fds[0]);
    wake_write_.reset(fds[1]);
  }
  FABRIC_ASSIGN_OR_RETURN(
      listener_,
      listen_tcp(options_.bind_address, options_.port)
          .context("starting the agent on " +
                   format_endpoint(options_.bind_address.empty() ? "*" : options_.bind_address,
                                   options_.port)));
  if (::fcntl(listener_.get(), F_SETFL, O_NONBLOCK) != 0) {
    return Error::from_errno(errno, "fcntl(O_NONBLOCK)", "listening socket");
  }
  FABRIC_ASSIGN_OR_RETURN(port_, bound_port(listener_.get()));
  log_access_settings();
  return Ok();
}

void Agent::log_access_settings() const {
  const std::string& bind = options_.bind_address;
  const bool everywhere = bind.empty() || bind == "::" || bind == "0.0.0.0";
  if (everywhere && options_.allow.empty() && !options_.token) {
    spdlog::warn("listening on every address of this host with neither --allow nor "
                 "--token-file: anyone who reaches port {} can start tests that flood the "
                 "network, pin memory and hold the NIC",
                 port_);
  }
  std::string allow;
  for (const Cidr& cidr : options_.allow)
    allow += (allow.empty() ? "" : ", ") + cidr.text();
  const ClientLimits& l = options_.limits;
  spdlog::info("clients: from {}; token {}; each at most {} sessions, {} messages, {} of "
               "buffers, {}s per session",
               allow.empty() ? "any address" : allow,
               options_.token ? "from " + options_.token->source() : "not required", l.max_sessions,
               units::format_size(l.max_message_bytes), units::format_size(l.max_memory_bytes),
               l.max_duration.count());
}

uint16_t Agent::port() const {
  return port_;
}

std::string Agent::listen_address() const {
  return listener_ ? local_address_text(listener_.get()) : "";
}

void Agent::request_stop() {
  stop_.store(true);
  notify_loop();
}

void Agent::notify_loop() {
  // write() is async-signal-safe; a full pipe already holds a wake-up.
  if (wake_write_) {
    ssize_t ignored = ::write(wake_write_.get(), "x", 1);
    (void)ignored;
  }
}

std::size_t Agent::active_sessions() const {
  std::lock_guard lock(mutex_);
  return running_;
}

AgentCounters Agent::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

std::string Agent::register_cookie(AgentSession& session) {
  std::string cookie = random_cookie();
  std::lock_guard lock(mutex_);
  cookies_.emplace_back(cookie, &session);
  return cookie;
}

void Agent::unregister_cookie(const std::string& cookie) {
  std::lock_guard lock(mutex_);
  std::erase_if(cookies_, [&](const auto& entry) { return entry.first == cookie; });
}

Result<void> Agent::attach_stream(const std::string& params_json, UniqueFd fd) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document params, json::parse(params_json, "attach params"));
  FABRIC_ASSIGN_OR_RETURN(std::string cookie, json::get_string(params, "params", "cookie"));
  const rapidjson::Value* stream = json::find_member(params, "stream");
  if (stream == nullptr || !stream->IsUint64()) {
    return Error(ErrorCode::kDecode, "params.stream", "must be a stream number");
  }
  FABRIC_TRY(set_blocking(fd.get(), true));
  std::lock_guard lock(mutex_);
  auto it = std::find_if(cookies_.begin(), cookies_.end(),
                         [&](const auto& entry) { return entry.first == cookie; });
  if (it == cookies_.end()) {
    return Error(ErrorCode::kNotFound, "attaching a data connection",
                 "no session is waiting for data connections with this cookie (it ended or "
                 "timed out)");
  }
  if (!it->second->attach(stream->GetUint64(), std::move(fd))) {
    return Error(ErrorCode::kInvalidArgument, "attaching a data connection",
                 "stream " + std::to_string(stream->GetUint64()) +
                     " is not expected or already attached");
  }
  ++counters_.streams_attached;
  return Ok();
}

void Agent::start_session(Pending& p, SessionDemand demand, std::string welcome_proof) {
  auto record = std::make_unique<SessionRecord>();
  record->session.reset(
      new AgentSession(*this, Channel(std::move(p.fd), "client " + p.peer), p.peer, p.hello.test));
  record->started = Clock::now();
  record->client = p.client;
  record->memory_bytes = demand.memory_bytes;
  SessionRecord* raw = record.get();
  std::lock_guard lock(mutex_);
  ++running_;
  record->thread = std::thread([this, raw, params = std::move(p.hello.params_json),
                                proof = std::move(welcome_proof)]() mutable {
    run_session(*raw, std::move(params), std::move(proof));
  });
  sessions_.push_back(std::move(record));
}

ClientUsage Agent::usage_of(const std::string& client) const {
  ClientUsage usage;
  std::lock_guard lock(mutex_);
  for (const auto& record : sessions_) {
    if (record->done || record->client != client) continue;
    ++usage.sessions;
    usage.memory_bytes += record->memory_bytes;
  }
  return usage;
}

void Agent::cut_overdue_sessions() {
  const auto limit = options_.limits.max_duration;
  auto now = Clock::now();
  std::lock_guard lock(mutex_);
  for (auto& record : sessions_) {
    if (record->done || record->cut || now - record->started < limit) continue;
    record->cut = true;
    ++counters_.sessions_cut;
    spdlog::warn("session from {} test={} cut: still running after {}s "
                 "(--max-session-duration)",
                 record->session->peer(), record->session->test(), limit.count());
    record->session->abort();
  }
}

void Agent::run_session(SessionRecord& record, std::string params_json, std::string welcome_proof) {
  AgentSession& session = *record.session;
  Result<void> outcome = Ok();
  auto params = json::parse(params_json, "params");
  if (!params.ok()) {
    outcome = std::move(params).error();
  } else {
    Welcome welcome{kProtocolVersion, options_.agent_text, options_.hostname,
                    std::move(welcome_proof)};
    outcome = session.channel().send(make_welcome(welcome), options_.handshake_timeout);
    if (outcome.ok()) {
      auto entry = std::find_if(tests_.begin(), tests_.end(),
                                [&](const TestEntry& e) { return e.name == session.test(); });
      outcome = entry->handler(session, *params);
      if (!outcome.ok()) {
        // Best effort: the client may be the reason the session failed.
        (void)session.channel().send(make_error_message(outcome.error()), kReplyTimeout);
      }
    }
  }
  double seconds = seconds_since(record.started);
  bool cut = false;
  {
    std::lock_guard lock(mutex_);
    cut = record.cut;
  }
  if (cut) {
    spdlog::info("session from {} test={} outcome=cut duration={:.3f}s: ran past "
                 "--max-session-duration ({}s)",
                 session.peer(), session.test(), seconds, options_.limits.max_duration.count());
  } else if (outcome.ok()) {
    spdlog::info("session from {} test={} outcome=ok duration={:.3f}s", session.peer(),
                 session.test(), seconds);
  } else {
    spdlog::info("session from {} test={} outcome=error duration={:.3f}s: {}", session.peer(),
                 session.test(), seconds, outcome.error().message());
  }
  {
    std::lock_guard lock(mutex_);
    ++(outcome.ok() ? counters_.sessions_ok : counters_.sessions_failed);
    --running_;
    record.done = true;
  }
  session_ended_.notify_all();
  notify_loop();
}

Result<void> Agent::run_delegated(AgentSession& session, const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(std::string test, json::get_string(params, "params", "test"));
  FABRIC_ASSIGN_OR_RETURN(std::string peer, json::get_string(params, "params", "peer"));
  rapidjson::Value empty(rapidjson::kObjectType);
  const rapidjson::Value* inner = &empty;
  if (params.HasMember("params")) {
    FABRIC_ASSIGN_OR_RETURN(inner, json::get_object(params, "params", "params"));
  }
  auto runner = std::find_if(runners_.begin(), runners_.end(),
                             [&](const auto& entry) { return entry.first == test; });
  if (runner == runners_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, r] : runners_)
      names.push_back(n);
    return Error(ErrorCode::kUnsupported, "run",
                 "the agent on " + options_.hostname + " cannot run test '" + test +
                     "' (it runs: " + (names.empty() ? "none" : join(names)) + ")");
  }
  FABRIC_ASSIGN_OR_RETURN(Endpoint target, parse_endpoint(peer, kDefaultAgentPort, "params.peer"));
  const Token* token = options_.token ? &*options_.token : nullptr;
  auto verified = verify_agent_target(target, token, options_.handshake_timeout);
  if (!verified.ok()) {
    spdlog::warn("session from {} test=run: no test against {} for that client: {}", session.peer(),
                 peer, verified.error().message());
    return delegation_refused(options_.hostname, peer);
  }
  FABRIC_ASSIGN_OR_RETURN(std::string report,
                          runner->second(*verified, target.port, *inner, token)
                              .context("from " + options_.hostname + " to " + peer));
  while (!report.empty() && (report.back() == '\n' || report.back() == ' '))
    report.pop_back();
  return session.channel().send("{\"type\":\"result\",\"report\":" + report + "}");
}

void Agent::reap_finished(bool wait_all) {
  std::vector<std::unique_ptr<SessionRecord>> finished;
  {
    std::lock_guard lock(mutex_);
    auto split = std::stable_partition(sessions_.begin(), sessions_.end(),
                                       [&](const auto& r) { return !(wait_all || r->done); });
    std::move(split, sessions_.end(), std::back_inserter(finished));
    sessions_.erase(split, sessions_.end());
  }
  for (auto& record : finished) {
    if (record->thread.joinable()) record->thread.join();
  }
}

Result<void> Agent::serve() {
  if (!listener_) FABRIC_TRY(listen());
  Handshakes handshakes(*this);
  Result<void> failure = Ok();

  // Out of descriptors, accept() fails while the connection stays queued: the listener
  // rests instead of spinning, and the warning repeats at most once a minute.
  std::optional<Clock::time_point> accept_rests_until;
  Clock::time_point last_accept_warning{};
  uint64_t unreported_accept_failures = 0;
  while (!stop_.load()) {
    if (accept_rests_until && Clock::now() >= *accept_rests_until) accept_rests_until.reset();
    std::vector<pollfd> fds;
    fds.push_back({listener_.get(), static_cast<short>(accept_rests_until ? 0 : POLLIN), 0});
    fds.push_back({wake_read_.get(), POLLIN, 0});
    // At least once a second: sessions that run too long are cut from here.
    auto next = Clock::now() + (accept_rests_until ? kAcceptRest : 1s);
    handshakes.watch(fds, next);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    int n = ::poll(fds.data(), fds.size(), std::max<int>(0, static_cast<int>(wait.count()) + 1));
    if (n < 0 && errno != EINTR) {
      // Not expected; stop the way a signal would, so that running sessions still end.
      failure = Error::from_errno(errno, "poll", "agent accept loop");
      stop_.store(true);
      break;
    }
    if (fds[1].revents != 0) {
      char drain[64];
      while (::read(wake_read_.get(), drain, sizeof drain) > 0) {
      }
    }
    reap_finished(/*wait_all=*/false);
    if (stop_.load()) break;
    cut_overdue_sessions();
    handshakes.service(fds, 2, n > 0);

    // New connections.
    if (fds[0].revents != 0) {
      for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK) {
            // Out of descriptors or memory: keep serving the sessions we have.
            const std::string why = Error::from_errno(errno, "accept4").message();
            ++unreported_accept_failures;
            {
              std::lock_guard lock(mutex_);
              ++counters_.accept_failures;
            }
            accept_rests_until = Clock::now() + kAcceptRest;
            if (Clock::now() - last_accept_warning >= 1min) {
              spdlog::warn("accept: {} ({} failures since the last such message); not "
                           "accepting for {} ms at a time",
                           why, unreported_accept_failures, kAcceptRest.count());
              unreported_accept_failures = 0;
              last_accept_warning = Clock::now();
            }
          }
          break;
        }
        handshakes.accept(UniqueFd(fd), ss, len);
      }
    }
  }

  // Stopping: no new connections; running sessions get stop_grace to end on their own.
  listener_.reset();
  handshakes.clear();
  {
    std::unique_lock lock(mutex_);
    bool ended = session_ended_.wait_for(lock, options_.stop_grace, [&] { return running_ == 0; });
    if (!ended) {
      spdlog::warn("stopping: {} sessions still running after {:.1f}s; cutting their connections",
                   running_, std::chrono::duration<double>(options_.stop_grace).count());
      for (auto& record : sessions_) {
        if (!record->done) record->session->abort();
      }
    }
  }
  reap_finished(/*wait_all=*/true);
  return failure;
}

} // namespace fabric::probes
