// Rank 0's end of the control channel (control_channel.h).
#include "nccltest/control_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "nccltest/control_messages.h"
#include "nccltest/rendezvous_auth.h"

namespace fabric::nccltest {

using namespace control;

struct ControlServer::Peer {
  explicit Peer(probes::Channel c) : channel(std::move(c)), accepted(WatchdogClock::now()) {}
  probes::Channel channel;
  probes::FrameReader reader;
  int rank = -1;
  // Between a hello and its proof, when the job has a token.
  int claimed_rank = -1;
  std::string hello_text, rank_nonce, zero_nonce;
  bool finished = false;
  bool dead = false;
  std::string dead_reason;
  WatchdogClock::time_point accepted;
  std::mutex send_mutex;
};

ControlServer::ControlServer(int world_size, ProgressBoard* board,
                             std::optional<probes::Token> token)
    : world_size_(world_size), board_(board), token_(std::move(token)),
      by_rank_(static_cast<std::size_t>(world_size)) {}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& bind_address,
                                                            uint16_t port, int world_size,
                                                            ProgressBoard* board,
                                                            std::optional<probes::Token> token) {
  std::unique_ptr<ControlServer> server(new ControlServer(world_size, board, std::move(token)));
  FABRIC_ASSIGN_OR_RETURN(server->listener_, probes::listen_tcp(bind_address, port));
  // accept_new() takes what is queued until the listener says EAGAIN: on a blocking
  // listener that last accept would wait for the next connection, and no rank would ever
  // hear back from rank 0.
  FABRIC_TRY(probes::set_blocking(server->listener_.get(), false));
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
  peer.channel.close(); // the descriptor itself closes when forget_dropped() lets go
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

void ControlServer::forget_dropped() {
  std::lock_guard lock(mutex_);
  // A rank's slot keeps its peer (and why it was lost) for the errors that name it; every
  // other dropped connection is released here, and with it its descriptor.
  std::erase_if(peers_, [](const std::shared_ptr<Peer>& p) { return p->dead; });
}

void ControlServer::accept_new() {
  for (int i = 0; i < 64; ++i) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors: the connection stays queued and the listener readable, so
      // polling it again at once would spin. Rest; silent connections time out meanwhile.
      spdlog::warn("control channel: accept: {}; not accepting for {} ms", std::strerror(errno),
                   kAcceptPause.count());
      accept_paused_until_ = WatchdogClock::now() + kAcceptPause;
      return;
    }
    UniqueFd owned(fd);
    (void)probes::set_nodelay(fd);
    std::string name = probes::peer_address_text(fd);
    std::shared_ptr<Peer> oldest_unjoined;
    {
      std::lock_guard lock(mutex_);
      std::size_t unjoined = 0;
      for (auto& p : peers_) {
        if (p->dead || p->rank >= 0) continue;
        if (++unjoined == 1) oldest_unjoined = p;
      }
      if (unjoined < kMaxUnjoined) oldest_unjoined.reset();
      peers_.push_back(std::make_shared<Peer>(probes::Channel(std::move(owned), name)));
    }
    // Strangers cannot crowd a rank out: the oldest of them makes room for the newcomer.
    if (oldest_unjoined) drop(*oldest_unjoined, "more than 64 connections waiting to join");
  }
}

void ControlServer::serve() {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::shared_ptr<Peer>> polled;
    if (accept_paused_until_ && WatchdogClock::now() >= *accept_paused_until_)
      accept_paused_until_.reset();
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      // The listener's entry stays, silenced while accepting rests, so peers start at 1.
      fds.push_back({listener_.get(), static_cast<short>(accept_paused_until_ ? 0 : POLLIN), 0});
      for (auto& p : peers_) {
        if (p->dead) continue;
        fds.push_back({p->channel.fd(), POLLIN, 0});
        polled.push_back(p);
      }
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(kPollInterval.count()));
    if (n < 0 && errno != EINTR) {
      spdlog::error("control channel: poll: {}", Error::from_errno(errno, "poll").message());
      return;
    }
    if (n > 0 && (fds[0].revents & POLLIN)) accept_new();
    for (std::size_t i = 0; n > 0 && i < polled.size(); ++i) {
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      read_frames(*polled[i]);
    }
    // Connections that never introduce themselves are not kept.
    auto now = WatchdogClock::now();
    std::vector<std::shared_ptr<Peer>> silent;
    {
      std::lock_guard lock(mutex_);
      for (auto& p : peers_) {
        if (!p->dead && p->rank < 0 && now - p->accepted > kHelloTimeout) silent.push_back(p);
      }
    }
    for (auto& p : silent)
      drop(*p, "did not join within 10 s");
    forget_dropped();
  }
}

void ControlServer::read_frames(Peer& peer) {
  // What has arrived, without waiting for the rest: a frame completes over as many calls
  // as its bytes take. A few frames per turn, so a chatty peer cannot starve the others.
  for (int frames = 0; frames < 16 && !peer.dead;) {
    if (peer.reader.complete()) {
      handle_frame(peer, peer.reader.take());
      ++frames;
      continue;
    }
    std::span<char> room = peer.reader.next();
    ssize_t n = ::recv(peer.channel.fd(), room.data(), room.size(), MSG_DONTWAIT);
    if (n > 0) {
      if (!peer.reader.advance(static_cast<std::size_t>(n))) {
        return drop(peer, "announced a frame of " + std::to_string(peer.reader.announced()) +
                              " bytes, more than " + std::to_string(peer.reader.limit()));
      }
      continue;
    }
    if (n == 0) return drop(peer, "connection closed by " + peer.channel.peer_name());
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return drop(peer, std::strerror(errno));
    return;
  }
}

void ControlServer::reply(Peer& peer, const std::string& json) {
  std::lock_guard lock(peer.send_mutex);
  // A short deadline: the I/O thread must not wait on a peer that does not read.
  (void)peer.channel.send(json, kReplyTimeout);
}

std::string ControlServer::admit(Peer& peer, int rank) {
  {
    std::lock_guard lock(mutex_);
    std::shared_ptr<Peer>& slot = by_rank_[static_cast<std::size_t>(rank)];
    if (slot != nullptr && !slot->dead) {
      return "rank " + std::to_string(rank) + " has already joined (from " +
             slot->channel.peer_name() + ")";
    }
    for (auto& p : peers_) {
      if (p.get() == &peer) slot = p;
    }
    peer.rank = rank;
  }
  if (board_ != nullptr) board_->connected(rank, WatchdogClock::now());
  changed_.notify_all();
  return "";
}

void ControlServer::handle_hello(Peer& peer, const rapidjson::Value& doc, const std::string& text) {
  auto rank = get_u64(doc, "rank");
  auto world = get_u64(doc, "world_size");
  auto protocol = get_u64(doc, "protocol");
  auto nonce = get_str(doc, "nonce");
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
    refusal =
        "rank " + std::to_string(*rank) + " is not one of 1 to " + std::to_string(world_size_ - 1);
  } else if (peer.rank >= 0 || peer.claimed_rank >= 0) {
    refusal = "a second hello on one connection";
  } else if (token_ && (!nonce.ok() || !probes::is_nonce(*nonce))) {
    refusal = "rank 0 asks for the job's token, and this rank has none (set " +
              std::string(kRendezvousTokenEnv) + " in every rank)";
  }
  if (refusal.empty() && token_) {
    auto zero_nonce = probes::make_nonce();
    if (!zero_nonce.ok()) return drop(peer, zero_nonce.error().message());
    peer.claimed_rank = static_cast<int>(*rank);
    peer.hello_text = text;
    peer.rank_nonce = *nonce;
    peer.zero_nonce = *zero_nonce;
    json::Writer w(false);
    w.begin_object().field("type", "challenge").field("nonce", peer.zero_nonce).end_object();
    return reply(peer, frame(w));
  }
  if (refusal.empty()) refusal = admit(peer, static_cast<int>(*rank));
  json::Writer w(false);
  if (refusal.empty()) {
    w.begin_object().field("type", "welcome").end_object();
    return reply(peer, frame(w));
  }
  w.begin_object().field("type", "refused").field("reason", refusal).end_object();
  reply(peer, frame(w));
  drop(peer, "refused: " + refusal);
}

void ControlServer::handle_proof(Peer& peer, const rapidjson::Value& doc) {
  auto proof = get_str(doc, "proof");
  if (!token_ || peer.claimed_rank < 0 || peer.rank >= 0)
    return drop(peer, "a proof nobody asked for");
  std::string refusal;
  if (!proof.ok() || !rendezvous_proof_ok(*token_, RendezvousSide::kRank, peer.zero_nonce,
                                          peer.rank_nonce, peer.hello_text, *proof)) {
    refusal = "wrong proof of the job's token (" + std::string(kRendezvousTokenEnv) + ")";
  } else {
    refusal = admit(peer, peer.claimed_rank);
  }
  json::Writer w(false);
  if (refusal.empty()) {
    auto mine = rendezvous_proof(*token_, RendezvousSide::kRankZero, peer.zero_nonce,
                                 peer.rank_nonce, peer.hello_text);
    if (!mine.ok()) return drop(peer, mine.error().message());
    w.begin_object().field("type", "welcome").field("proof", *mine).end_object();
    return reply(peer, frame(w));
  }
  w.begin_object().field("type", "refused").field("reason", refusal).end_object();
  reply(peer, frame(w));
  drop(peer, "refused: " + refusal);
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
  if (*type == "hello") return handle_hello(peer, doc, text);
  if (*type == "proof") return handle_proof(peer, doc);
  if (peer.rank < 0) {
    // Only a rank that joined is heard: a stranger's abort or gather is never obeyed.
    drop(peer, "'" + *type + "' before joining");
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
  std::shared_ptr<Peer> peer;
  {
    std::lock_guard lock(mutex_);
    peer = by_rank_[static_cast<std::size_t>(rank)];
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

} // namespace fabric::nccltest
