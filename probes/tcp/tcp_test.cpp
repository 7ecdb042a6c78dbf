#include "probes/tcp/tcp_test.h"

#include <cerrno>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/units.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/agent.h"
#include "probes/agent/session.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxStreams = 128;
constexpr std::size_t kMaxWriteSize = 16 * 1024 * 1024;
constexpr std::size_t kMaxLatencySize = 1024 * 1024;
constexpr std::size_t kMaxIterations = 100'000'000;
// The agent waits this long for the client's data connections.
constexpr auto kStreamsTimeout = 10s;

// --- params ---

Result<uint64_t> get_uint(const rapidjson::Value& params, const char* name, uint64_t fallback) {
  auto it = params.FindMember(name);
  if (it == params.MemberEnd()) return fallback;
  if (!it->value.IsUint64()) {
    return Error(ErrorCode::kInvalidArgument, json::field_path("params", name),
                 "must be a non-negative integer");
  }
  return it->value.GetUint64();
}

Result<double> get_double(const rapidjson::Value& params, const char* name, double fallback) {
  auto it = params.FindMember(name);
  if (it == params.MemberEnd()) return fallback;
  if (!it->value.IsNumber()) {
    return Error(ErrorCode::kInvalidArgument, json::field_path("params", name), "must be a number");
  }
  return it->value.GetDouble();
}

Result<TcpDirection> parse_direction(std::string_view name) {
  if (name == "forward") return TcpDirection::kForward;
  if (name == "reverse") return TcpDirection::kReverse;
  if (name == "bidir") return TcpDirection::kBidir;
  return Error(ErrorCode::kInvalidArgument, "params.direction",
               "'" + std::string(name) + "' is not forward, reverse or bidir");
}

// --- the wire between the two sides ---

std::string streams_message(const std::string& cookie) {
  return "{\"type\":\"streams\",\"cookie\":\"" + cookie + "\"}";
}

void write_transfer(json::Writer& w, const char* name, const TransferTotals& t) {
  w.key(name).begin_object();
  w.field("bytes", t.bytes).field("seconds", t.seconds);
  w.end_object();
}

std::string side_result_message(const std::vector<StreamResult>& results) {
  json::Writer w(false);
  w.begin_object().field("type", "result");
  write_transfer(w, "sent", total_sent(results));
  write_transfer(w, "received", total_received(results));
  w.key("streams").begin_array();
  for (const auto& r : results) {
    TransferTotals received = total_received({r});
    w.begin_object()
        .field("sent_bytes", r.sent.bytes)
        .field("received_bytes", received.bytes)
        .field("received_seconds", received.seconds)
        .end_object();
  }
  w.end_array().end_object();
  return w.str();
}

Result<TransferTotals> read_transfer(const rapidjson::Value& message, const char* name) {
  auto it = message.FindMember(name);
  if (it == message.MemberEnd() || !it->value.IsObject()) {
    return Error(ErrorCode::kDecode, "agent result", std::string("missing \"") + name + "\"");
  }
  TransferTotals t;
  FABRIC_ASSIGN_OR_RETURN(t.bytes, get_uint(it->value, "bytes", 0));
  FABRIC_ASSIGN_OR_RETURN(t.seconds, get_double(it->value, "seconds", 0));
  return t;
}

struct AgentSide {
  TransferTotals sent, received;
  std::vector<uint64_t> sent_streams;
  std::vector<TransferTotals> received_streams;
};

Result<AgentSide> parse_agent_side(const rapidjson::Value& message) {
  AgentSide side;
  FABRIC_ASSIGN_OR_RETURN(side.sent, read_transfer(message, "sent"));
  FABRIC_ASSIGN_OR_RETURN(side.received, read_transfer(message, "received"));
  auto streams = message.FindMember("streams");
  if (streams != message.MemberEnd() && streams->value.IsArray()) {
    for (const auto& s : streams->value.GetArray()) {
      FABRIC_ASSIGN_OR_RETURN(uint64_t sent, get_uint(s, "sent_bytes", 0));
      TransferTotals received;
      FABRIC_ASSIGN_OR_RETURN(received.bytes, get_uint(s, "received_bytes", 0));
      FABRIC_ASSIGN_OR_RETURN(received.seconds, get_double(s, "received_seconds", 0));
      side.sent_streams.push_back(sent);
      side.received_streams.push_back(received);
    }
  }
  return side;
}

StreamPlan plan_for(const TcpBwOptions& options, bool agent_side) {
  StreamPlan plan;
  bool client_sends = options.direction != TcpDirection::kReverse;
  bool agent_sends = options.direction != TcpDirection::kForward;
  plan.send = agent_side ? agent_sends : client_sends;
  plan.receive = agent_side ? client_sends : agent_sends;
  plan.write_size = options.write_size;
  plan.duration = options.duration;
  plan.bytes = options.bytes == 0 ? 0 : std::max<uint64_t>(1, options.bytes / options.streams);
  return plan;
}

Result<void> prepare_data_socket(int fd, std::chrono::milliseconds timeout, bool nodelay) {
  FABRIC_TRY(set_io_timeout(fd, timeout));
  if (nodelay) FABRIC_TRY(set_nodelay(fd));
  return Ok();
}

// How long a side waits for the other's result after its own part: the other side may
// still be draining what is in flight.
std::chrono::milliseconds result_timeout(const TcpBwOptions& options) {
  return options.timeout + 10s;
}

// --- server sides ---

Result<void> serve_tcp_bw(AgentSession& session, const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(TcpBwOptions options, tcp_bw_options_from_json(params));
  std::string cookie = session.accept_streams(options.streams);
  FABRIC_TRY(session.channel().send(streams_message(cookie)));
  FABRIC_ASSIGN_OR_RETURN(std::vector<int> fds, session.wait_streams(kStreamsTimeout));
  for (int fd : fds)
    FABRIC_TRY(prepare_data_socket(fd, options.timeout, false));
  FABRIC_TRY(session.channel().send(R"({"type":"start"})"));
  std::vector<StreamResult> results = run_streams(fds, plan_for(options, /*agent_side=*/true));
  if (auto error = first_error(results)) return std::move(*error);
  // A client that vanished looks like one that finished sending (its sockets closed), so
  // the client confirms the end on the control channel before the agent reports.
  FABRIC_TRY(expect_message(session.channel(), "finished", result_timeout(options))
                 .context("waiting for the client to finish"));
  return session.channel().send(side_result_message(results));
}

Result<void> serve_tcp_lat(AgentSession& session, const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(TcpLatOptions options, tcp_lat_options_from_json(params));
  std::string cookie = session.accept_streams(1);
  FABRIC_TRY(session.channel().send(streams_message(cookie)));
  FABRIC_ASSIGN_OR_RETURN(std::vector<int> fds, session.wait_streams(kStreamsTimeout));
  int fd = fds.front();
  FABRIC_TRY(prepare_data_socket(fd, options.timeout, true));
  FABRIC_TRY(session.channel().send(R"({"type":"start"})"));
  std::unique_ptr<char[]> buffer(new char[options.size]);
  const std::size_t rounds = options.warmup + options.iters;
  for (std::size_t i = 0; i < rounds; ++i) {
    std::size_t got = 0;
    while (got < options.size) {
      ssize_t n = ::recv(fd, buffer.get() + got, options.size - got, 0);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
      } else if (n == 0) {
        return Error(ErrorCode::kSystem, "tcp_lat echo",
                     "client closed the data connection after " + std::to_string(i) + " of " +
                         std::to_string(rounds) + " round trips");
      } else if (errno != EINTR) {
        return Error::from_errno(errno, "recv", "tcp_lat echo");
      }
    }
    std::size_t sent = 0;
    while (sent < options.size) {
      ssize_t n = ::send(fd, buffer.get() + sent, options.size - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<std::size_t>(n);
      } else if (errno != EINTR) {
        return Error::from_errno(errno, "send", "tcp_lat echo");
      }
    }
  }
  return session.channel().send(R"({"type":"result","echoed":)" + std::to_string(rounds) + "}");
}

// --- client helpers ---

struct ClientSetup {
  Session session;
  std::vector<UniqueFd> data;
};

Result<ClientSetup> open_test(const std::string& host, uint16_t port, const char* test,
                              const std::string& params, std::size_t streams,
                              std::chrono::milliseconds timeout, bool nodelay, const Token* token) {
  FABRIC_ASSIGN_OR_RETURN(Session session,
                          connect_session(host, port, test, params, timeout, token));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document announce,
                          expect_message(session.channel, "streams", timeout));
  FABRIC_ASSIGN_OR_RETURN(std::string cookie, json::get_string(announce, "", "cookie"));
  ClientSetup setup{std::move(session), {}};
  for (std::size_t i = 0; i < streams; ++i) {
    FABRIC_ASSIGN_OR_RETURN(UniqueFd fd, open_data_connection(host, port, cookie, i, timeout));
    FABRIC_TRY(prepare_data_socket(fd.get(), timeout, nodelay));
    setup.data.push_back(std::move(fd));
  }
  FABRIC_TRY(expect_message(setup.session.channel, "start", timeout + kStreamsTimeout));
  return setup;
}

AgentIdentity identity_of(const Session& session) {
  return {session.agent, session.welcome.hostname, session.welcome.agent};
}

double monotonic_raw_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

} // namespace

std::string_view tcp_direction_name(TcpDirection direction) {
  switch (direction) {
  case TcpDirection::kForward: return "forward";
  case TcpDirection::kReverse: return "reverse";
  case TcpDirection::kBidir: return "bidir";
  }
  return "forward";
}

Result<void> validate(const TcpBwOptions& o) {
  if (o.streams < 1 || o.streams > kMaxStreams) {
    return Error(ErrorCode::kInvalidArgument, "--streams",
                 "must be from 1 to " + std::to_string(kMaxStreams));
  }
  if (o.write_size < 1 || o.write_size > kMaxWriteSize) {
    return Error(ErrorCode::kInvalidArgument, "--size", "must be from 1 B to 16 MiB");
  }
  if (o.bytes == 0 && o.duration <= std::chrono::nanoseconds::zero()) {
    return Error(ErrorCode::kInvalidArgument, "--duration", "must be positive");
  }
  if (o.duration > std::chrono::hours(24)) {
    return Error(ErrorCode::kInvalidArgument, "--duration", "must be at most 24 h");
  }
  if (o.timeout < 100ms) {
    return Error(ErrorCode::kInvalidArgument, "--timeout", "must be at least 100 ms");
  }
  return Ok();
}

Result<void> validate(const TcpLatOptions& o) {
  if (o.size < 1 || o.size > kMaxLatencySize) {
    return Error(ErrorCode::kInvalidArgument, "--size", "must be from 1 B to 1 MiB for latency");
  }
  if (o.iters < 1 || o.iters > kMaxIterations) {
    return Error(ErrorCode::kInvalidArgument, "--iters",
                 "must be from 1 to " + std::to_string(kMaxIterations));
  }
  if (o.warmup > kMaxIterations) {
    return Error(ErrorCode::kInvalidArgument, "--warmup",
                 "must be at most " + std::to_string(kMaxIterations));
  }
  if (o.timeout < 100ms) {
    return Error(ErrorCode::kInvalidArgument, "--timeout", "must be at least 100 ms");
  }
  return Ok();
}

std::string to_params_json(const TcpBwOptions& o) {
  json::Writer w(false);
  w.begin_object()
      .field("streams", static_cast<uint64_t>(o.streams))
      .field("write_size_bytes", static_cast<uint64_t>(o.write_size))
      .field("duration_s", std::chrono::duration<double>(o.duration).count())
      .field("total_bytes", o.bytes)
      .field("direction", tcp_direction_name(o.direction))
      .field("timeout_ms", static_cast<int64_t>(o.timeout.count()))
      .end_object();
  return w.str();
}

std::string to_params_json(const TcpLatOptions& o) {
  json::Writer w(false);
  w.begin_object()
      .field("size_bytes", static_cast<uint64_t>(o.size))
      .field("iters", static_cast<uint64_t>(o.iters))
      .field("warmup", static_cast<uint64_t>(o.warmup))
      .field("timeout_ms", static_cast<int64_t>(o.timeout.count()))
      .end_object();
  return w.str();
}

Result<TcpBwOptions> tcp_bw_options_from_json(const rapidjson::Value& params) {
  TcpBwOptions o;
  if (!params.IsObject()) return Error(ErrorCode::kInvalidArgument, "params", "must be an object");
  FABRIC_ASSIGN_OR_RETURN(uint64_t streams, get_uint(params, "streams", o.streams));
  FABRIC_ASSIGN_OR_RETURN(uint64_t size, get_uint(params, "write_size_bytes", o.write_size));
  FABRIC_ASSIGN_OR_RETURN(
      double seconds,
      get_double(params, "duration_s", std::chrono::duration<double>(o.duration).count()));
  FABRIC_ASSIGN_OR_RETURN(o.bytes, get_uint(params, "total_bytes", 0));
  FABRIC_ASSIGN_OR_RETURN(uint64_t timeout_ms,
                          get_uint(params, "timeout_ms", static_cast<uint64_t>(o.timeout.count())));
  FABRIC_ASSIGN_OR_RETURN(std::optional<std::string> direction,
                          json::get_optional_string(params, "params", "direction"));
  if (direction) {
    FABRIC_ASSIGN_OR_RETURN(o.direction, parse_direction(*direction));
  }
  if (!std::isfinite(seconds) || seconds < 0) {
    return Error(ErrorCode::kInvalidArgument, "params.duration_s",
                 "must be a finite number of seconds, 0 or more");
  }
  o.streams = static_cast<std::size_t>(std::min<uint64_t>(streams, kMaxStreams + 1));
  o.write_size = static_cast<std::size_t>(std::min<uint64_t>(size, kMaxWriteSize + 1));
  o.duration = std::chrono::nanoseconds(static_cast<int64_t>(std::min(seconds, 1e6) * 1e9));
  o.timeout = std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, 3'600'000));
  FABRIC_TRY(validate(o));
  return o;
}

Result<TcpLatOptions> tcp_lat_options_from_json(const rapidjson::Value& params) {
  TcpLatOptions o;
  if (!params.IsObject()) return Error(ErrorCode::kInvalidArgument, "params", "must be an object");
  FABRIC_ASSIGN_OR_RETURN(uint64_t size, get_uint(params, "size_bytes", o.size));
  FABRIC_ASSIGN_OR_RETURN(uint64_t iters, get_uint(params, "iters", o.iters));
  FABRIC_ASSIGN_OR_RETURN(uint64_t warmup, get_uint(params, "warmup", o.warmup));
  FABRIC_ASSIGN_OR_RETURN(uint64_t timeout_ms,
                          get_uint(params, "timeout_ms", static_cast<uint64_t>(o.timeout.count())));
  o.size = static_cast<std::size_t>(std::min<uint64_t>(size, kMaxLatencySize + 1));
  o.iters = static_cast<std::size_t>(std::min<uint64_t>(iters, kMaxIterations + 1));
  o.warmup = static_cast<std::size_t>(std::min<uint64_t>(warmup, kMaxIterations + 1));
  o.timeout = std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, 3'600'000));
  FABRIC_TRY(validate(o));
  return o;
}

double TcpBwReport::avg_gbps() const {
  double sum = 0;
  for (const auto& d : directions)
    sum += d.receiver.gbps();
  return sum;
}

double TcpBwReport::avg_gbytes_per_s() const {
  double sum = 0;
  for (const auto& d : directions)
    sum += d.receiver.gbytes_per_s();
  return sum;
}

double TcpInterval::gbps() const {
  const double seconds = end_s - start_s;
  return seconds > 0 ? units::bytes_per_second_to_gbps(static_cast<double>(bytes) / seconds) : 0;
}

namespace {

// Runs the streams while a second thread reports each period's bytes, the last (partial)
// one when the streams end.
std::vector<StreamResult> run_streams_reporting(const std::vector<int>& fds, StreamPlan plan,
                                                const TcpIntervalReporting& intervals) {
  if (!intervals.report) return run_streams(fds, plan);
  std::atomic<uint64_t> moved{0};
  plan.moved = &moved;
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
  const auto start = std::chrono::steady_clock::now();
  std::thread reporter([&] {
    TcpInterval interval;
    uint64_t before = 0;
    auto next = start + intervals.period;
    std::unique_lock lock(mutex);
    for (bool last = false; !last;) {
      last = done_changed.wait_until(lock, next, [&] { return done; });
      const auto now = last ? std::chrono::steady_clock::now() : next;
      const uint64_t total = moved.load();
      interval.end_s = std::chrono::duration<double>(now - start).count();
      interval.bytes = total - before;
      if (!last || interval.bytes > 0) intervals.report(interval);
      interval.start_s = interval.end_s;
      before = total;
      next += intervals.period;
    }
  });
  std::vector<StreamResult> results = run_streams(fds, plan);
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  done_changed.notify_one();
  reporter.join();
  return results;
}

} // namespace

Result<TcpBwReport> run_tcp_bw(const std::string& host, uint16_t port, const TcpBwOptions& options,
                               const Token* token, const TcpIntervalReporting& intervals) {
  FABRIC_TRY(validate(options));
  FABRIC_ASSIGN_OR_RETURN(ClientSetup setup,
                          open_test(host, port, kTcpBwTest, to_params_json(options),
                                    options.streams, options.timeout, false, token));
  std::vector<int> fds;
  for (const auto& fd : setup.data)
    fds.push_back(fd.get());
  std::vector<StreamResult> ours =
      run_streams_reporting(fds, plan_for(options, /*agent_side=*/false), intervals);
  Channel& channel = setup.session.channel;
  if (auto error = first_error(ours)) {
    // When the agent failed first its error says more (a reset here is its consequence).
    auto theirs = channel.receive(500ms);
    if (theirs.ok() && message_type(*theirs) == "error") {
      return error_from_message(*theirs, channel.peer_name());
    }
    (void)channel.send(make_error_message(*error));
    return std::move(*error).with_context("tcp_bw to " + setup.session.agent);
  }
  FABRIC_TRY(channel.send(R"({"type":"finished"})"));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document result,
                          expect_message(channel, "result", result_timeout(options)));
  FABRIC_ASSIGN_OR_RETURN(AgentSide agent, parse_agent_side(result));

  TcpBwReport report;
  report.agent = identity_of(setup.session);
  report.options = options;
  if (options.direction != TcpDirection::kReverse) {
    TcpBwDirection d;
    d.name = "client_to_agent";
    d.sender = total_sent(ours);
    d.receiver = agent.received;
    d.receiver_streams = agent.received_streams;
    for (const auto& r : ours)
      d.sender_stream_bytes.push_back(r.sent.bytes);
    report.directions.push_back(std::move(d));
  }
  if (options.direction != TcpDirection::kForward) {
    TcpBwDirection d;
    d.name = "agent_to_client";
    d.sender = agent.sent;
    d.receiver = total_received(ours);
    for (const auto& r : ours)
      d.receiver_streams.push_back(total_received({r}));
    d.sender_stream_bytes = agent.sent_streams;
    report.directions.push_back(std::move(d));
  }
  return report;
}

Result<TcpLatReport> run_tcp_lat(const std::string& host, uint16_t port,
                                 const TcpLatOptions& options, const Token* token) {
  FABRIC_TRY(validate(options));
  FABRIC_ASSIGN_OR_RETURN(
      ClientSetup setup,
      open_test(host, port, kTcpLatTest, to_params_json(options), 1, options.timeout, true, token));
  int fd = setup.data.front().get();
  std::unique_ptr<char[]> out(new char[options.size]);
  std::unique_ptr<char[]> in(new char[options.size]);
  std::fill_n(out.get(), options.size, static_cast<char>(0x5a));
  std::vector<double> samples;
  samples.reserve(options.iters);
  const std::size_t rounds = options.warmup + options.iters;
  for (std::size_t i = 0; i < rounds; ++i) {
    double start = monotonic_raw_us();
    std::size_t sent = 0;
    while (sent < options.size) {
      ssize_t n = ::send(fd, out.get() + sent, options.size - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<std::size_t>(n);
      } else if (errno != EINTR) {
        return Error::from_errno(errno, "send", "tcp_lat to " + setup.session.agent);
      }
    }
    std::size_t got = 0;
    while (got < options.size) {
      ssize_t n = ::recv(fd, in.get() + got, options.size - got, 0);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
      } else if (n == 0) {
        return Error(ErrorCode::kSystem, "tcp_lat to " + setup.session.agent,
                     "the agent closed the data connection after " + std::to_string(i) +
                         " round trips");
      } else if (errno != EINTR) {
        return Error::from_errno(errno, "recv", "tcp_lat to " + setup.session.agent);
      }
    }
    if (i >= options.warmup) samples.push_back((monotonic_raw_us() - start) / 2);
  }
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document result,
                          expect_message(setup.session.channel, "result", options.timeout));
  FABRIC_ASSIGN_OR_RETURN(uint64_t echoed, get_uint(result, "echoed", 0));
  if (echoed != rounds) {
    return Error(ErrorCode::kDecode, "tcp_lat to " + setup.session.agent,
                 "the agent echoed " + std::to_string(echoed) + " messages, expected " +
                     std::to_string(rounds));
  }
  TcpLatReport report;
  report.agent = identity_of(setup.session);
  report.options = options;
  report.summary = summarize(std::move(samples));
  return report;
}

Result<SessionDemand> tcp_bw_demand(const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(TcpBwOptions o, tcp_bw_options_from_json(params));
  SessionDemand demand;
  demand.memory_bytes = static_cast<uint64_t>(o.streams) * o.write_size; // a buffer per stream
  demand.message_bytes = o.write_size;
  if (o.bytes == 0) demand.duration = o.duration;
  return demand;
}

Result<SessionDemand> tcp_lat_demand(const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(TcpLatOptions o, tcp_lat_options_from_json(params));
  SessionDemand demand;
  demand.memory_bytes = o.size;
  demand.message_bytes = o.size;
  return demand;
}

void register_tcp_tests(Agent& agent) {
  agent.register_session_test(kTcpBwTest, serve_tcp_bw, tcp_bw_demand);
  agent.register_session_test(kTcpLatTest, serve_tcp_lat, tcp_lat_demand);
  agent.register_runner(
      kTcpBwTest,
      [](const std::string& host, uint16_t port, const rapidjson::Value& params,
         const Token* token) -> Result<std::string> {
        FABRIC_ASSIGN_OR_RETURN(TcpBwOptions options, tcp_bw_options_from_json(params));
        FABRIC_ASSIGN_OR_RETURN(TcpBwReport report, run_tcp_bw(host, port, options, token));
        return render_tcp_bw_json(report, false);
      });
  agent.register_runner(
      kTcpLatTest,
      [](const std::string& host, uint16_t port, const rapidjson::Value& params,
         const Token* token) -> Result<std::string> {
        FABRIC_ASSIGN_OR_RETURN(TcpLatOptions options, tcp_lat_options_from_json(params));
        FABRIC_ASSIGN_OR_RETURN(TcpLatReport report, run_tcp_lat(host, port, options, token));
        return render_tcp_lat_json(report, false);
      });
}

} // namespace fabric::probes
