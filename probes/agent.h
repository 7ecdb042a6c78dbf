// The fabric-probe agent (`fabric-probe server`): one listening TCP port serving many
// tests, one after the other and at the same time, for as long as it runs (a DaemonSet
// keeps one on every node). perftest's servers serve one client and exit; this one must
// not.
//
// One thread, the accept loop, accepts connections and reads each hello without
// blocking, so that a client that connects and says nothing costs no thread and is
// dropped after the handshake timeout. A valid hello for a test starts a session thread
// (at most max_sessions at a time; more clients get "busy"); an "attach" hello joins a data
// connection to a running session (the TCP bandwidth test's streams use the same port,
// as iperf3's do, so a firewall or a hostPort needs only one port).
//
// Every wait in a session is bounded by a deadline; a client that vanishes ends only its
// own session. request_stop() (SIGINT/SIGTERM) stops accepting, lets running sessions end
// within stop_grace, then cuts their connections and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/fd.h"
#include "common/result.h"
#include "probes/channel.h"
#include "probes/protocol.h"

namespace fabric::probes {

struct AgentOptions {
  std::string bind_address; // "" = every address (dual-stack where IPv6 exists)
  uint16_t port = kDefaultAgentPort;
  std::size_t max_sessions = 16;
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds stop_grace{std::chrono::seconds(10)};
  std::string agent_text; // "" = this build's version line
  std::string hostname;   // "" = gethostname()
};

struct AgentCounters {
  uint64_t sessions_ok = 0;
  uint64_t sessions_failed = 0;
  uint64_t refused_busy = 0;
  uint64_t refused_other = 0; // bad hello, other version, unknown test, bad cookie
  uint64_t handshake_timeouts = 0;
  uint64_t streams_attached = 0;
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
// The client side of a test, for "run" delegation (mesh): returns the report JSON.
using ClientRunner = std::function<Result<std::string>(const std::string& host, uint16_t port,
                                                       const rapidjson::Value& params)>;

class Agent {
public:
  explicit Agent(AgentOptions options);
  ~Agent(); // stops and joins whatever still runs
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Registration happens before serve().
  void register_test(std::string name, TestHandler handler);
  void register_session_test(std::string name, SessionHandler handler);
  void register_runner(std::string name, ClientRunner runner);
  std::vector<std::string> test_names() const;

  // Binds the listening socket; port() is known from then on.
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
  struct Loop;
  struct SessionRecord;

  void start_session(UniqueFd fd, std::string peer, Hello hello);
  void run_session(SessionRecord& record, std::string params_json);
  Result<void> run_delegated(AgentSession& session, const rapidjson::Value& params);
  // Hands a data connection to the session that announced `cookie`.
  Result<void> attach_stream(const std::string& params_json, UniqueFd fd);
  void unregister_cookie(const std::string& cookie);
  std::string register_cookie(AgentSession& session);
  void reap_finished(bool wait_all);
  void notify_loop();

  AgentOptions options_;
  std::vector<std::pair<std::string, SessionHandler>> tests_;
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
