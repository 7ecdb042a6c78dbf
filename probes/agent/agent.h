// The fabric-probe agent (`fabric-probe server`): one listening TCP port serving many
// tests, one after the other and at the same time, for as long as it runs (a DaemonSet
// keeps one on every node). perftest's servers serve one client and exit; this one must
// not.
//
// One thread, the accept loop, accepts connections and runs each handshake without
// blocking, so that a client that connects and says nothing costs no thread and is
// dropped after the handshake timeout. A client whose address is not allowed (--allow) is
// refused at once; with a token (--token-file) the hello is answered with a challenge that
// the client must meet (auth.h). A valid hello for a test then starts a session thread, if
// the agent runs fewer than max_sessions and the client stays within its limits
// (agent_access.h); others are refused with the reason. An "attach" hello joins a data
// connection to a running session (the TCP bandwidth test's streams use the same port, as
// iperf3's do, so a firewall or a hostPort needs only one port); its random cookie, handed
// out inside an authenticated session, is its credential.
//
// Every wait in a session is bounded by a deadline, and a session still running after the
// clients' max_duration is cut; a client that vanishes ends only its own session.
// request_stop() (SIGINT/SIGTERM) stops accepting, lets running sessions end within
// stop_grace, then cuts their connections and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/fd.h"
#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/channel.h"
#include "probes/agent/agent_access.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {

struct AgentOptions {
  std::string bind_address; // "" = every address (dual-stack where IPv6 exists)
  uint16_t port = kDefaultAgentPort;
  std::size_t max_sessions = 16; // all clients together
  ClientLimits limits;           // each client address
  std::vector<Cidr> allow;       // client networks; empty = every address
  // Clients must prove they hold it; it is also what this agent presents to another
  // agent when it runs a test for a mesh.
  std::optional<Token> token;
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds stop_grace{std::chrono::seconds(10)};
  std::string agent_text; // "" = this build's version line
  std::string hostname;   // "" = gethostname()
};

struct AgentCounters {
  uint64_t sessions_ok = 0;
  uint64_t sessions_failed = 0;
  uint64_t refused_busy = 0;
  uint64_t refused_access = 0; // address not allowed, no token or the wrong one
  uint64_t refused_limits = 0; // a client's session count, message size, memory, duration
  uint64_t refused_other = 0;  // bad hello, other version, unknown test
  uint64_t handshake_timeouts = 0;
  uint64_t streams_attached = 0;
  uint64_t sessions_cut = 0;    // ran past the clients' max_duration
  uint64_t accept_failures = 0; // accept() out of descriptors or memory
};

class Agent;

// What a test's server side sees of its session: the channel, and data connections.
class AgentSession {
public:
  AgentSession(const AgentSession&) = delete;
  AgentSession& operator=(const AgentSession&) = delete;
  ~AgentSession();

  Channel& channel() { return channel_; }
  const std::string& peer() const { return peer_; }
  const std::string& test() const { return test_; }

  // Announces that the client will open `count` data connections; returns the cookie the
  // client sends in each "attach" hello (open_data_connection()).
  std::string accept_streams(std::size_t count);
  // The attached data connections, in stream order, once all have arrived. The sockets
  // are blocking and stay owned by the session (closed when it ends).
  Result<std::vector<int>> wait_streams(std::chrono::milliseconds timeout);

  // The agent is stopping: a long test should wind down.
  bool stop_requested() const;
  // Set once the agent cuts this session (stop_grace ran out). Busy loops that watch no
  // socket (the RDMA data phases) poll it.
  const std::atomic<bool>& cut_flag() const { return aborted_; }

private:
  friend class Agent;
  AgentSession(Agent& agent, Channel channel, std::string peer, std::string test);
  // Called by the accept loop; false when the stream index is unexpected or taken.
  bool attach(std::size_t stream, UniqueFd fd);
  // Cuts the control and data connections so that blocked calls return.
  void abort();

  Agent& agent_;
  Channel channel_;
  std::string peer_;
  std::string test_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::string cookie_;
  std::vector<UniqueFd> streams_;
  std::size_t attached_ = 0;
  std::atomic<bool> aborted_{false};
};

// A test's server side. It owns the channel after the welcome and ends with a "result"
// message; an Error it returns is sent to the client as an error message.
using TestHandler = std::function<Result<void>(Channel&, const rapidjson::Value& params)>;
// A server side that needs data connections.
using SessionHandler = std::function<Result<void>(AgentSession&, const rapidjson::Value& params)>;
// What a session of a test will cost the agent, from its params; checked against the
// client's limits before the session starts. A test without one costs nothing.
using DemandEstimate = std::function<Result<SessionDemand>(const rapidjson::Value& params)>;
// The client side of a test, for "run" delegation (mesh): returns the report JSON. `token`
// is the agent's own, for the agent it connects to.
using ClientRunner = std::function<Result<std::string>(
    const std::string& host, uint16_t port, const rapidjson::Value& params, const Token* token)>;

class Agent {
public:
  explicit Agent(AgentOptions options);
  ~Agent(); // stops and joins whatever still runs
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Registration happens before serve().
  void register_test(std::string name, TestHandler handler, DemandEstimate estimate = {});
  void register_session_test(std::string name, SessionHandler handler,
                             DemandEstimate estimate = {});
  void register_runner(std::string name, ClientRunner runner);
  std::vector<std::string> test_names() const;

  // Binds the listening socket; port() is known from then on. Warns when the agent
  // listens on every address with neither an allow-list nor a token.
  Result<void> listen();
  uint16_t port() const;
  // "0.0.0.0:18515", "[::]:18515".
  std::string listen_address() const;

  // Serves until request_stop(); returns once every session has ended.
  Result<void> serve();
  // Safe to call from a signal handler and from any thread.
  void request_stop();

  std::size_t active_sessions() const;
  AgentCounters counters() const;
  const AgentOptions& options() const { return options_; }

private:
  friend class AgentSession;
  struct Handshakes;
  struct Pending;
  struct SessionRecord;
  struct TestEntry {
    std::string name;
    SessionHandler handler;
    DemandEstimate estimate;
  };

  // The steps of a handshake, on the accept loop's thread. Each either keeps the
  // connection pending (true) or has handed it on or refused it.
  bool on_frame(Pending& p, Handshakes& h);
  bool on_hello(Pending& p, std::string text, Handshakes& h);
  bool on_proof(Pending& p, std::string text, Handshakes& h);
  void admit(Pending& p, std::string welcome_proof, Handshakes& h);
  Result<SessionDemand> estimate(const std::string& test, const rapidjson::Value& params) const;
  ClientUsage usage_of(const std::string& client) const;
  void cut_overdue_sessions();
  void log_access_settings() const;

  void start_session(Pending& p, SessionDemand demand, std::string welcome_proof);
  void run_session(SessionRecord& record, std::string params_json, std::string welcome_proof);
  Result<void> run_delegated(AgentSession& session, const rapidjson::Value& params);
  // Hands a data connection to the session that announced `cookie`.
  Result<void> attach_stream(const std::string& params_json, UniqueFd fd);
  void unregister_cookie(const std::string& cookie);
  std::string register_cookie(AgentSession& session);
  void reap_finished(bool wait_all);
  void notify_loop();

  AgentOptions options_;
  std::vector<TestEntry> tests_;
  std::vector<std::pair<std::string, ClientRunner>> runners_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  UniqueFd wake_read_;
  UniqueFd wake_write_;
  std::atomic<bool> stop_{false};

  mutable std::mutex mutex_; // guards everything below
  std::condition_variable session_ended_;
  std::vector<std::unique_ptr<SessionRecord>> sessions_;
  std::vector<std::pair<std::string, AgentSession*>> cookies_;
  std::size_t running_ = 0;
  AgentCounters counters_;
};

} // namespace fabric::probes
