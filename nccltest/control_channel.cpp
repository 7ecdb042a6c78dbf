// The control channel's messages as hex, and every other rank's end (control_channel.h).
#include "nccltest/control_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "common/json.h"
#include "nccltest/control_messages.h"
#include "nccltest/rendezvous_auth.h"

namespace fabric::nccltest {

using namespace control;

namespace {

// Waits for `fd` to become readable; false on timeout.
bool control_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  return n > 0;
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

ControlClient::ControlClient(probes::Channel channel) : channel_(std::move(channel)) {}

namespace {

// The handshake on a fresh connection to `e`: hello, then (with a token) challenge, proof
// and rank 0's proof. An error of kInvalidEnvironment is final (rank 0 refused, or is not
// this job's); any other is worth another try.
Result<void> introduce_to_rank_zero(probes::Channel& channel, const probes::Endpoint& e, int rank,
                                    int world_size, const probes::Token* token,
                                    WatchdogClock::time_point deadline) {
  auto wait = [&] {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - WatchdogClock::now());
    return std::clamp<std::chrono::milliseconds>(left, 1ms, kHelloTimeout);
  };
  auto final_error = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidEnvironment, "joining rank 0 at " + probes::format_endpoint(e),
                 why);
  };
  std::string nonce;
  if (token != nullptr) {
    FABRIC_ASSIGN_OR_RETURN(nonce, probes::make_nonce());
  }
  json::Writer w(false);
  w.begin_object().field("type", "hello").field("protocol", kControlProtocol);
  w.field("rank", rank).field("world_size", world_size);
  if (token != nullptr) w.field("nonce", nonce);
  w.end_object();
  const std::string hello = frame(w);
  FABRIC_TRY(channel.send(hello, kSendTimeout));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document reply, channel.receive(wait()));
  auto type = get_str(reply, "type");
  std::string zero_nonce;
  if (type.ok() && *type == "challenge") {
    auto challenge = get_str(reply, "nonce");
    if (token == nullptr) {
      return final_error(std::string("rank 0 asks for the job's token, and this rank has none "
                                     "(set ") +
                         kRendezvousTokenEnv + " in every rank)");
    }
    if (!challenge.ok() || !probes::is_nonce(*challenge)) return final_error("malformed challenge");
    zero_nonce = *challenge;
    FABRIC_ASSIGN_OR_RETURN(std::string proof, rendezvous_proof(*token, RendezvousSide::kRank,
                                                                zero_nonce, nonce, hello));
    json::Writer p(false);
    p.begin_object().field("type", "proof").field("proof", proof).end_object();
    FABRIC_TRY(channel.send(frame(p), kSendTimeout));
    FABRIC_ASSIGN_OR_RETURN(reply, channel.receive(wait()));
    type = get_str(reply, "type");
  }
  if (type.ok() && *type == "welcome") {
    if (token == nullptr) return Ok();
    auto proof = get_str(reply, "proof");
    if (zero_nonce.empty() || !proof.ok() ||
        !rendezvous_proof_ok(*token, RendezvousSide::kRankZero, zero_nonce, nonce, hello, *proof)) {
      return final_error("what answered did not prove the job's token: not this job's rank 0");
    }
    return Ok();
  }
  auto reason = get_str(reply, "reason");
  return final_error("refused: " + (reason.ok() ? *reason : std::string("no reason given")));
}

} // namespace

Result<std::unique_ptr<ControlClient>>
ControlClient::connect(const std::vector<probes::Endpoint>& candidates, int rank, int world_size,
                       WatchdogClock::time_point deadline, const probes::Token* token) {
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
      auto introduced = introduce_to_rank_zero(channel, e, rank, world_size, token, deadline);
      if (introduced.ok()) {
        std::unique_ptr<ControlClient> client(new ControlClient(std::move(channel)));
        client->thread_ = std::thread([c = client.get()] { c->serve(); });
        return client;
      }
      if (introduced.error().code() == ErrorCode::kInvalidEnvironment) return introduced.error();
      last_error = introduced.error().message();
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
    if (!control_readable(channel_.fd(), kPollInterval)) continue;
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
