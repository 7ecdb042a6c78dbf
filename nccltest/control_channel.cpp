#include "nccltest/control_channel.h"

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include "common/json.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

constexpr auto kHelloTimeout = 10s; // a connection must introduce itself within this
constexpr auto kFrameTimeout = 10s; // the rest of a frame once its first byte arrived
constexpr auto kSendTimeout = 10s;
constexpr auto kPollInterval = 200ms; // how often the I/O threads look at their stop flag
constexpr std::size_t kMaxPendingExchanges = 64;

std::string frame(json::Writer& w) {
  std::string s = w.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Waits for `fd` to become readable; false on timeout.
bool readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  return n > 0;
}

Result<uint64_t> get_u64(const rapidjson::Value& doc, const char* name) {
  if (!doc.HasMember(name) || !doc[name].IsUint64()) {
    return Error(ErrorCode::kDecode, "control message",
                 std::string("field ") + name + " missing or not a whole number");
  }
  return doc[name].GetUint64();
}

Result<std::string> get_str(const rapidjson::Value& doc, const char* name) {
  if (!doc.HasMember(name) || !doc[name].IsString()) {
    return Error(ErrorCode::kDecode, "control message",
                 std::string("field ") + name + " missing or not a string");
  }
  return std::string(doc[name].GetString(), doc[name].GetStringLength());
}

Result<Beat> parse_beat(const rapidjson::Value& doc) {
  Beat b;
  FABRIC_ASSIGN_OR_RETURN(b.phase, get_u64(doc, "phase"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t finished, get_u64(doc, "finished"));
  FABRIC_ASSIGN_OR_RETURN(b.what, get_str(doc, "what"));
  FABRIC_ASSIGN_OR_RETURN(b.collective, get_str(doc, "collective"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t bytes, get_u64(doc, "bytes"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t in_place, get_u64(doc, "in_place"));
  if (b.what.size() > 256 || b.collective.size() > 64) {
    return Error(ErrorCode::kDecode, "control message", "beat text too long");
  }
  b.finished = finished != 0;
  b.bytes = bytes;
  b.in_place = in_place != 0;
  return b;
}

std::string result_message(uint64_t seq, const std::vector<std::string>& data) {
  json::Writer w(false);
  w.begin_object().field("type", "result").field("seq", seq).key("data").begin_array();
  for (const std::string& d : data)
    w.value(to_hex(d));
  w.end_array().end_object();
  return frame(w);
}

std::string abort_message(int exit_code, const std::string& reason) {
  json::Writer w(false);
  w.begin_object().field("type", "abort").field("code", exit_code).field("reason", reason);
  w.end_object();
  return frame(w);
}

} // namespace

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

Result<std::string> from_hex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return Error(ErrorCode::kDecode, "hex data", "odd length");
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error(ErrorCode::kDecode, "hex data", "not a hex digit");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// ---- server ----

struct ControlServer::Peer {
  explicit Peer(probes::Channel c) : channel(std::move(c)), accepted(WatchdogClock::now()) {}
  probes::Channel channel;
  int rank = -1;
  bool finished = false;
  bool dead = false;
  std::string dead_reason;
  WatchdogClock::time_point accepted;
  std::mutex send_mutex;
};

ControlServer::ControlServer(int world_size, ProgressBoard* board)
    : world_size_(world_size), board_(board), by_rank_(static_cast<std::size_t>(world_size)) {}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& bind_address,
                                                            uint16_t port, int world_size,
                                                            ProgressBoard* board) {
  std::unique_ptr<ControlServer> server(new ControlServer(world_size, board));
  FABRIC_ASSIGN_OR_RETURN(server->listener_, probes::listen_tcp(bind_address, port));
  FABRIC_ASSIGN_OR_RETURN(server->port_, probes::bound_port(server->listener_.get()));
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

ControlServer::~ControlServer() {
  stop();
}

void ControlServer::on_abort_request(AbortHandler handler) {
  std::lock_guard lock(mutex_);
  abort_handler_ = std::move(handler);
}

void ControlServer::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
      return;
    }
    stopping_ = true;
    for (auto& p : peers_)
      p->channel.close();
  }
  changed_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void ControlServer::drop(Peer& peer, const std::string& why) {
  std::unique_lock lock(mutex_);
  if (peer.dead) return;
  peer.dead = true;
  peer.dead_reason = why;
  peer.channel.close();
  int rank = peer.rank;
  bool finished = peer.finished;
  bool stopping = stopping_;
  lock.unlock();
  changed_.notify_all();
  if (rank < 0) {
    spdlog::warn("control channel: dropped a connection from {}: {}", peer.channel.peer_name(),
                 why);
  } else if (!finished && !stopping) {
    spdlog::warn("control channel: rank {} lost: {}", rank, why);
    if (board_ != nullptr) board_->lost(rank, WatchdogClock::now());
  }
}

void ControlServer::serve() {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Peer*> polled;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      fds.push_back({listener_.get(), POLLIN, 0});
      for (auto& p : peers_) {
        if (p->dead) continue;
        fds.push_back({p->channel.fd(), POLLIN, 0});
        polled.push_back(p.get());
      }
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(kPollInterval.count()));
    if (n < 0 && errno != EINTR) {
      spdlog::error("control channel: poll: {}", Error::from_errno(errno, "poll").message());
      return;
    }
    if (n > 0 && (fds[0].revents & POLLIN)) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        UniqueFd owned(fd);
        (void)probes::set_nodelay(fd);
        std::string name = probes::peer_address_text(fd);
        std::lock_guard lock(mutex_);
        peers_.push_back(std::make_unique<Peer>(probes::Channel(std::move(owned), name)));
      }
    }
    for (std::size_t i = 0; n > 0 && i < polled.size(); ++i) {
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Peer& peer = *polled[i];
      auto text = peer.channel.receive_text(kFrameTimeout);
      if (!text.ok()) {
        drop(peer, text.error().message());
        continue;
      }
      handle_frame(peer, *text);
    }
    // Connections that never introduce themselves are not kept.
    auto now = WatchdogClock::now();
    std::vector<Peer*> silent;
    {
      std::lock_guard lock(mutex_);
      for (auto& p : peers_) {
        if (!p->dead && p->rank < 0 && now - p->accepted > kHelloTimeout) silent.push_back(p.get());
      }
    }
    for (Peer* p : silent)
      drop(*p, "no hello within 10 s");
  }
}

void ControlServer::handle_frame(Peer& peer, const std::string& text) {
  auto parsed = json::parse(text, "control message from " + peer.channel.peer_name());
  if (!parsed.ok() || !parsed->IsObject()) {
    drop(peer, parsed.ok() ? "not a JSON object" : parsed.error().message());
    return;
  }
  const rapidjson::Document& doc = *parsed;
  auto type = get_str(doc, "type");
  if (!type.ok()) {
    drop(peer, type.error().message());
    return;
  }
  if (*type == "hello") {
    auto rank = get_u64(doc, "rank");
    auto world = get_u64(doc, "world_size");
    auto protocol = get_u64(doc, "protocol");
    std::string refusal;
    if (!rank.ok() || !world.ok() || !protocol.ok()) {
      refusal = "malformed hello";
    } else if (*protocol != kControlProtocol) {
      refusal = "control protocol " + std::to_string(*protocol) + ", rank 0 speaks " +
                std::to_string(kControlProtocol) + " (mixed fabric-nccltest versions?)";
    } else if (*world != static_cast<uint64_t>(world_size_)) {
      refusal = "WORLD_SIZE " + std::to_string(*world) + " differs from rank 0's " +
                std::to_string(world_size_);
    } else if (*rank == 0 || *rank >= static_cast<uint64_t>(world_size_)) {
      refusal = "rank " + std::to_string(*rank) + " is not one of 1 to " +
                std::to_string(world_size_ - 1);
    } else if (peer.rank >= 0) {
      refusal = "a second hello on one connection";
    }
    if (refusal.empty()) {
      std::lock_guard lock(mutex_);
      Peer*& slot = by_rank_[*rank];
      if (slot != nullptr && !slot->dead) {
        refusal = "rank " + std::to_string(*rank) + " has already joined (from " +
                  slot->channel.peer_name() + ")";
      } else {
        slot = &peer;
        peer.rank = static_cast<int>(*rank);
      }
    }
    json::Writer w(false);
    if (refusal.empty()) {
      w.begin_object().field("type", "welcome").end_object();
    } else {
      w.begin_object().field("type", "refused").field("reason", refusal).end_object();
    }
    {
      std::lock_guard lock(peer.send_mutex);
      (void)peer.channel.send(frame(w), kSendTimeout);
    }
    if (!refusal.empty()) {
      drop(peer, "refused: " + refusal);
      return;
    }
    if (board_ != nullptr) board_->connected(peer.rank, WatchdogClock::now());
    changed_.notify_all();
    return;
  }
  if (peer.rank < 0) {
    drop(peer, "'" + *type + "' before hello");
    return;
  }
  if (*type == "gather") {
    auto seq = get_u64(doc, "seq");
    auto data = get_str(doc, "data");
    if (!seq.ok() || !data.ok()) return drop(peer, "malformed gather");
    auto bytes = from_hex(*data);
    if (!bytes.ok()) return drop(peer, bytes.error().message());
    {
      std::lock_guard lock(mutex_);
      // Exchanges complete one at a time; a peer far ahead of rank 0 is not following the
      // protocol, and must not make rank 0 keep its data without bound.
      if (gathered_.size() > kMaxPendingExchanges && gathered_.count(*seq) == 0) {
        bytes = Error(ErrorCode::kDecode, "gather", "too many exchanges pending");
      } else {
        gathered_[*seq][peer.rank] = std::move(*bytes);
      }
    }
    if (!bytes.ok()) return drop(peer, bytes.error().message());
    changed_.notify_all();
  } else if (*type == "beat") {
    auto beat = parse_beat(doc);
    if (!beat.ok()) return drop(peer, beat.error().message());
    if (board_ != nullptr) board_->beat(peer.rank, *beat, WatchdogClock::now());
  } else if (*type == "finished") {
    {
      std::lock_guard lock(mutex_);
      peer.finished = true;
    }
    if (board_ != nullptr) board_->finished(peer.rank, WatchdogClock::now());
  } else if (*type == "abort") {
    auto code = get_u64(doc, "code");
    auto reason = get_str(doc, "reason");
    AbortHandler handler;
    {
      std::lock_guard lock(mutex_);
      handler = abort_handler_;
    }
    if (handler) {
      handler(code.ok() ? static_cast<int>(std::min<uint64_t>(*code, 255)) : 2,
              "rank " + std::to_string(peer.rank) +
                  " failed: " + (reason.ok() ? *reason : std::string("(no reason given)")));
    }
  } else {
    spdlog::warn("control channel: ignoring a '{}' message from rank {}", *type, peer.rank);
  }
}

Result<void> ControlServer::wait_for_ranks(WatchdogClock::time_point deadline) {
  std::unique_lock lock(mutex_);
  auto missing = [&] {
    std::string ranks;
    int count = 0;
    for (int r = 1; r < world_size_; ++r) {
      if (by_rank_[r] == nullptr) {
        if (++count <= 16) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (count > 16) ranks += " and " + std::to_string(count - 16) + " more";
    return ranks;
  };
  while (!missing().empty()) {
    if (stopping_) return Error(ErrorCode::kSystem, "rendezvous", "stopped");
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !missing().empty()) {
      return Error(ErrorCode::kTimeout, "rendezvous",
                   "ranks " + missing() + " did not join rank 0 on port " + std::to_string(port_) +
                       " in time")
          .with_hint("check that every rank was started with the same WORLD_SIZE and "
                     "MASTER_ADDR/MASTER_PORT, and that rank 0's port is reachable");
    }
  }
  return Ok();
}

Result<void> ControlServer::send_to(int rank, const std::string& json) {
  Peer* peer = nullptr;
  {
    std::lock_guard lock(mutex_);
    peer = by_rank_[rank];
    if (peer == nullptr || peer->dead) {
      return Error(ErrorCode::kSystem, "control channel",
                   "rank " + std::to_string(rank) + " is not connected" +
                       (peer ? " (" + peer->dead_reason + ")" : ""));
    }
  }
  std::lock_guard lock(peer->send_mutex);
  return peer->channel.send(json, kSendTimeout).context("sending to rank " + std::to_string(rank));
}

Result<std::vector<std::string>> ControlServer::allgather(uint64_t seq, std::string mine,
                                                          WatchdogClock::time_point deadline) {
  std::vector<std::string> all(static_cast<std::size_t>(world_size_));
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      auto& got = gathered_[seq];
      if (got.size() == static_cast<std::size_t>(world_size_ - 1)) break;
      for (int r = 1; r < world_size_; ++r) {
        if (got.count(r) == 0 && by_rank_[r] != nullptr && by_rank_[r]->dead) {
          return Error(ErrorCode::kSystem, "exchanging with every rank",
                       "rank " + std::to_string(r) + " is gone: " + by_rank_[r]->dead_reason);
        }
      }
      if (stopping_) return Error(ErrorCode::kSystem, "exchanging with every rank", "stopped");
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
          gathered_[seq].size() != static_cast<std::size_t>(world_size_ - 1)) {
        std::string late;
        for (int r = 1; r < world_size_; ++r) {
          if (gathered_[seq].count(r) == 0) late += (late.empty() ? "" : ", ") + std::to_string(r);
        }
        return Error(ErrorCode::kTimeout, "exchanging with every rank",
                     "no answer from ranks " + late + " in time");
      }
    }
    for (auto& [rank, bytes] : gathered_[seq])
      all[rank] = std::move(bytes);
    gathered_.erase(seq);
  }
  all[0] = std::move(mine);
  std::string message = result_message(seq, all);
  for (int r = 1; r < world_size_; ++r)
    FABRIC_TRY(send_to(r, message));
  return all;
}

Result<void> ControlServer::broadcast(uint64_t seq, const std::string& mine) {
  std::string message = result_message(seq, {mine});
  for (int r = 1; r < world_size_; ++r)
    FABRIC_TRY(send_to(r, message));
  return Ok();
}

void ControlServer::send_abort(int exit_code, const std::string& reason) {
  std::string message = abort_message(exit_code, reason);
  for (int r = 1; r < world_size_; ++r)
    (void)send_to(r, message);
}

// ---- client ----

ControlClient::ControlClient(probes::Channel channel) : channel_(std::move(channel)) {}

Result<std::unique_ptr<ControlClient>>
ControlClient::connect(const std::vector<probes::Endpoint>& candidates, int rank, int world_size,
                       WatchdogClock::time_point deadline) {
  if (candidates.empty()) {
    return Error(ErrorCode::kInternal, "connecting to rank 0", "no address to try");
  }
  std::string last_error;
  auto backoff = 100ms;
  for (int attempt = 1;; ++attempt) {
    for (const probes::Endpoint& e : candidates) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - WatchdogClock::now());
      if (left <= 0ms) break;
      auto fd = probes::connect_tcp(e.host, e.port, std::min<std::chrono::milliseconds>(left, 2s));
      if (!fd.ok()) {
        last_error = fd.error().message();
        continue;
      }
      (void)probes::set_nodelay(fd->get());
      probes::Channel channel(std::move(*fd), "rank 0 at " + probes::format_endpoint(e));
      json::Writer w(false);
      w.begin_object().field("type", "hello").field("protocol", kControlProtocol);
      w.field("rank", rank).field("world_size", world_size).end_object();
      if (auto sent = channel.send(frame(w), kSendTimeout); !sent.ok()) {
        last_error = sent.error().message();
        continue;
      }
      auto reply = channel.receive(kHelloTimeout);
      if (!reply.ok()) {
        last_error = reply.error().message();
        continue;
      }
      auto type = get_str(*reply, "type");
      if (type.ok() && *type == "welcome") {
        std::unique_ptr<ControlClient> client(new ControlClient(std::move(channel)));
        client->thread_ = std::thread([c = client.get()] { c->serve(); });
        return client;
      }
      auto reason = get_str(*reply, "reason");
      return Error(ErrorCode::kInvalidEnvironment,
                   "joining rank 0 at " + probes::format_endpoint(e),
                   "refused: " + (reason.ok() ? *reason : std::string("no reason given")));
    }
    if (WatchdogClock::now() + backoff >= deadline) {
      return Error(ErrorCode::kTimeout, "joining rank 0",
                   "no rank 0 answered at " + probes::format_endpoint(candidates.front()) +
                       " after " + std::to_string(attempt) + " attempts; last: " + last_error)
          .with_hint("rank 0 may not be up yet (raise --rendezvous-timeout) or its port is "
                     "unreachable from here");
    }
    spdlog::debug("rank 0 not reachable yet ({}); retrying", last_error);
    std::this_thread::sleep_for(backoff); // retry pacing while rank 0 starts, not a wait
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 2s);
  }
}

ControlClient::~ControlClient() {
  stop();
}

void ControlClient::on_abort(AbortHandler handler) {
  std::lock_guard lock(mutex_);
  abort_handler_ = std::move(handler);
}

void ControlClient::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  channel_.close();
  changed_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void ControlClient::serve() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    if (!readable(channel_.fd(), kPollInterval)) continue;
    auto text = channel_.receive_text(kFrameTimeout);
    std::string problem;
    std::optional<rapidjson::Document> doc;
    if (!text.ok()) {
      problem = text.error().message();
    } else {
      auto parsed = json::parse(*text, "control message from rank 0");
      if (!parsed.ok() || !parsed->IsObject()) {
        problem = parsed.ok() ? "not a JSON object" : parsed.error().message();
      } else {
        doc = std::move(*parsed);
      }
    }
    auto type = doc ? get_str(*doc, "type") : Result<std::string>(std::string());
    if (doc && type.ok() && *type == "result") {
      auto seq = get_u64(*doc, "seq");
      std::vector<std::string> data;
      bool ok = seq.ok() && doc->HasMember("data") && (*doc)["data"].IsArray();
      if (ok) {
        for (const auto& v : (*doc)["data"].GetArray()) {
          auto bytes = v.IsString() ? from_hex(v.GetString())
                                    : Result<std::string>(Error(ErrorCode::kDecode, "data"));
          if (!bytes.ok()) {
            ok = false;
            break;
          }
          data.push_back(std::move(*bytes));
        }
      }
      if (ok) {
        std::lock_guard lock(mutex_);
        results_[*seq] = std::move(data);
        changed_.notify_all();
        continue;
      }
      problem = "malformed result from rank 0";
    } else if (doc && type.ok() && *type == "abort") {
      auto code = get_u64(*doc, "code");
      auto reason = get_str(*doc, "reason");
      AbortHandler handler;
      {
        std::lock_guard lock(mutex_);
        handler = abort_handler_;
      }
      std::string why = "rank 0 ended the run: " + (reason.ok() ? *reason : std::string("?"));
      if (handler) handler(code.ok() ? static_cast<int>(std::min<uint64_t>(*code, 255)) : 2, why);
      continue;
    } else if (doc && problem.empty()) {
      spdlog::warn("control channel: ignoring a message from rank 0 of type '{}'",
                   type.ok() ? *type : "?");
      continue;
    }
    // The connection is unusable from here.
    AbortHandler handler;
    bool expected = false;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      closed_reason_ = problem;
      expected = stopping_ || done_;
      handler = abort_handler_;
    }
    changed_.notify_all();
    if (!expected && handler) {
      handler(kExitSystem, "lost the control connection to rank 0 (" + problem + ")");
    }
    return;
  }
}

Result<void> ControlClient::send(const std::string& json) {
  std::lock_guard lock(send_mutex_);
  return channel_.send(json, kSendTimeout);
}

Result<std::vector<std::string>> ControlClient::allgather(uint64_t seq, const std::string& mine,
                                                          WatchdogClock::time_point deadline) {
  json::Writer w(false);
  w.begin_object().field("type", "gather").field("seq", seq).field("data", to_hex(mine));
  w.end_object();
  FABRIC_TRY(send(frame(w)).context("sending to rank 0"));
  std::unique_lock lock(mutex_);
  while (results_.count(seq) == 0) {
    if (closed_) {
      return Error(ErrorCode::kSystem, "exchanging with rank 0",
                   "connection lost: " + closed_reason_);
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        results_.count(seq) == 0) {
      return Error(ErrorCode::kTimeout, "exchanging with rank 0", "no answer in time");
    }
  }
  std::vector<std::string> data = std::move(results_[seq]);
  results_.erase(seq);
  return data;
}

Result<std::string> ControlClient::broadcast(uint64_t seq, WatchdogClock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (results_.count(seq) == 0) {
    if (closed_) {
      return Error(ErrorCode::kSystem, "receiving from rank 0",
                   "connection lost: " + closed_reason_);
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        results_.count(seq) == 0) {
      return Error(ErrorCode::kTimeout, "receiving from rank 0", "nothing arrived in time");
    }
  }
  std::vector<std::string> data = std::move(results_[seq]);
  results_.erase(seq);
  if (data.size() != 1) {
    return Error(ErrorCode::kDecode, "receiving from rank 0", "expected one value");
  }
  return std::move(data[0]);
}

void ControlClient::beat(const Beat& b) {
  json::Writer w(false);
  w.begin_object().field("type", "beat").field("phase", static_cast<uint64_t>(b.phase));
  w.field("finished", b.finished ? 1u : 0u).field("what", b.what).field("collective", b.collective);
  w.field("bytes", static_cast<uint64_t>(b.bytes)).field("in_place", b.in_place ? 1u : 0u);
  w.end_object();
  if (auto sent = send(frame(w)); !sent.ok()) {
    spdlog::debug("control channel: beat not sent: {}", sent.error().message());
  }
}

void ControlClient::finished() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  json::Writer w(false);
  w.begin_object().field("type", "finished").end_object();
  (void)send(frame(w));
}

void ControlClient::request_abort(int exit_code, const std::string& reason) {
  (void)send(abort_message(exit_code, reason));
}

} // namespace fabric::nccltest
