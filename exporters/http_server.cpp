#include "exporters/http_server.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/build_info.h"
#include "common/log.h"
#include "exporters/exposition.h"
#include "exporters/gzip.h"
#include "exporters/http_request.h"

namespace fabric::exporters {

using Clock = std::chrono::steady_clock;

namespace {

// A client that stops reading its response is dropped after this long.
constexpr auto kWriteTimeout = std::chrono::seconds(60);
// How long a kept-alive connection may wait for its next request (Prometheus scrapes every
// 15 to 60 s over one connection).
constexpr auto kKeepAliveTimeout = std::chrono::seconds(120);
// accept() out of descriptors: the listening socket rests this long, instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
// After an answer that closes the connection, what the client still sends is read and
// dropped for at most this long.
constexpr auto kDrainTime = std::chrono::seconds(1);
constexpr uint64_t kWakeId = 0;
constexpr uint64_t kListenId = 1;

const char* reason_phrase(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 413: return "Content Too Large";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  default: return "Unknown";
  }
}

std::string index_page() {
  return "<!DOCTYPE html>\n<html><head><title>fabric-exporter</title></head><body>\n"
         "<h1>fabric-exporter</h1>\n<p>" +
         std::string(build_info().version) + " (git " + build_info().git_revision +
         ")</p>\n<ul>\n<li><a href=\"/metrics\">/metrics</a>: Prometheus text format "
         "0.0.4</li>\n<li><a href=\"/healthz\">/healthz</a>: liveness</li>\n</ul>\n"
         "</body></html>\n";
}

// The peer's address as bytes (4 for IPv4, 16 for IPv6): the key of the per-address limit.
std::string address_key(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    return {reinterpret_cast<const char*>(&in.sin_addr), sizeof in.sin_addr};
  }
  if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer);
    return {reinterpret_cast<const char*>(&in6.sin6_addr), sizeof in6.sin6_addr};
  }
  return {};
}

// A warning that repeats at most once a minute, with how many times it happened meanwhile.
class QuietWarning {
public:
  void note(std::string_view what) {
    ++count_;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::minutes(1)) return;
    spdlog::warn("{} ({} times since the last such message)", what, count_);
    count_ = 0;
    last_ = now;
  }

private:
  uint64_t count_ = 0;
  Clock::time_point last_{};
};

// A response being written: its head, and a body that is either its own or a view of a
// shared exposition kept alive here.
struct OutgoingResponse {
  std::string head;
  std::string own_body;
  std::shared_ptr<Exposition> exposition;
  bool gzip = false;      // the exposition's compressed form
  bool head_only = false; // HEAD: no body
  bool close = false;

  // Computed when written: a view kept in the struct would dangle once it moves.
  std::string_view body() const {
    if (head_only) return {};
    if (exposition) return gzip ? exposition->gzip : exposition->text;
    return own_body;
  }
};

std::string response_head(int status, const char* content_type, std::size_t length, bool gzip,
                          bool close) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                     "\r\nContent-Type: " + content_type +
                     "\r\nContent-Length: " + std::to_string(length) + "\r\n";
  if (gzip) head += "Content-Encoding: gzip\r\n";
  if (status == 405) head += "Allow: GET, HEAD\r\n";
  if (close) head += "Connection: close\r\n";
  return head + "\r\n";
}

OutgoingResponse make_outgoing(int status, const char* content_type, std::string body,
                               bool head_only, bool close) {
  OutgoingResponse r;
  r.own_body = std::move(body);
  r.close = close;
  r.head_only = head_only;
  r.head = response_head(status, content_type, r.own_body.size(), false, close);
  return r;
}

} // namespace

struct HttpServer::Job {
  uint64_t id;
  bool head_only;
  bool gzip;
  bool close;
};

// The event loop: every connection's state, owned by the loop's thread; workers see only
// jobs and hand back responses.
struct HttpServer::Loop {
  enum class State { kReading, kWorking, kWriting, kDraining };
  struct Connection {
    UniqueFd fd;
    std::string address;
    std::string in;
    State state = State::kReading;
    bool waiting_first_byte = true;
    bool peer_done = false; // the client shut down its side
    Clock::time_point deadline;
    OutgoingResponse out;
    std::size_t written = 0;
  };

  Loop(const HttpOptions& options, int listen_fd) : options_(options), listen_fd_(listen_fd) {}

  Result<void> init();
  void run();
  void stop();

  // Workers: the next job (blocks), nullopt when stopping; a job's response.
  std::optional<Job> next_job();
  void finish(uint64_t id, OutgoingResponse response);

private:
  void watch(uint64_t id, int fd, uint32_t events, int op = EPOLL_CTL_MOD);
  void accept_all();
  void refuse(int fd, std::string_view why);
  void on_event(uint64_t id, uint32_t events);
  void read_from(uint64_t id, Connection& c);
  void handle_buffer(uint64_t id, Connection& c);
  void start_writing(uint64_t id, Connection& c, OutgoingResponse response);
  void write_to(uint64_t id, Connection& c);
  void drain(uint64_t id, Connection& c);
  void close_connection(uint64_t id);
  void sweep();
  void take_finished();

  const HttpOptions& options_;
  const int listen_fd_;
  UniqueFd epoll_;
  UniqueFd wake_;
  std::unordered_map<uint64_t, Connection> connections_;
  std::map<std::string, unsigned> per_address_;
  uint64_t next_id_ = 2;
  std::optional<Clock::time_point> accept_paused_until_;
  Clock::time_point last_sweep_{};
  QuietWarning over_limit_warning_;
  QuietWarning accept_warning_;

  std::mutex mutex_; // guards what workers share: jobs_, finished_, stopping_
  std::condition_variable work_ready_;
  std::deque<Job> jobs_;
  std::vector<std::pair<uint64_t, OutgoingResponse>> finished_;
  bool stopping_ = false;
};

Result<void> HttpServer::Loop::init() {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) return Error::from_errno(errno, "epoll_create1");
  wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_) return Error::from_errno(errno, "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev) != 0)
    return Error::from_errno(errno, "epoll_ctl", "eventfd");
  ev.data.u64 = kListenId;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_fd_, &ev) != 0)
    return Error::from_errno(errno, "epoll_ctl", "listening socket");
  return Ok();
}

void HttpServer::Loop::watch(uint64_t id, int fd, uint32_t events, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  ::epoll_ctl(epoll_.get(), op, fd, &ev);
}

void HttpServer::Loop::run() {
  epoll_event events[256];
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    const bool timers = !connections_.empty() || accept_paused_until_.has_value();
    const int n = ::epoll_wait(epoll_.get(), events, 256,
                               timers ? static_cast<int>(kSweepInterval.count()) : -1);
    for (int i = 0; i < n; ++i)
      on_event(events[i].data.u64, events[i].events);
    if (accept_paused_until_ && Clock::now() >= *accept_paused_until_) {
      accept_paused_until_.reset();
      watch(kListenId, listen_fd_, EPOLLIN);
    }
    if (Clock::now() - last_sweep_ >= kSweepInterval) sweep();
  }
}

void HttpServer::Loop::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

std::optional<HttpServer::Job> HttpServer::Loop::next_job() {
  std::unique_lock lock(mutex_);
  work_ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
  if (stopping_) return std::nullopt;
  Job job = jobs_.front();
  jobs_.pop_front();
  return job;
}

void HttpServer::Loop::finish(uint64_t id, OutgoingResponse response) {
  {
    std::lock_guard lock(mutex_);
    finished_.emplace_back(id, std::move(response));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void HttpServer::Loop::on_event(uint64_t id, uint32_t events) {
  if (id == kWakeId) {
    uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(wake_.get(), &count, sizeof count);
    take_finished();
    return;
  }
  if (id == kListenId) {
    accept_all();
    return;
  }
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  if (events & EPOLLERR) return close_connection(id);
  if (c.state == State::kReading && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
    return read_from(id, c);
  if (c.state == State::kWriting && (events & EPOLLOUT)) return write_to(id, c);
  if (c.state == State::kDraining && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
    return drain(id, c);
  if (events & EPOLLHUP) close_connection(id); // gone while its scrape runs
}

void HttpServer::Loop::accept_all() {
  // A bounded batch, so a flood of connections cannot starve the connections already open.
  for (int i = 0; i < 256; ++i) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN) return;
      // Out of descriptors or memory: the pending connection stays queued, so polling again
      // at once would spin. Rest, and say so once in a while.
      accept_warning_.note(std::string("accept: ") + std::strerror(errno) +
                           "; not accepting for 100 ms");
      watch(kListenId, listen_fd_, 0);
      accept_paused_until_ = Clock::now() + kAcceptPause;
      return;
    }
    std::string address = address_key(peer);
    if (connections_.size() >= options_.max_connections) {
      refuse(fd, "the exporter holds max_connections connections");
      continue;
    }
    unsigned& held = per_address_[address];
    if (held >= options_.max_connections_per_address) {
      refuse(fd, "this address holds max_connections_per_address connections");
      continue;
    }
    ++held;
    const uint64_t id = next_id_++;
    Connection& c = connections_[id];
    c.fd.reset(fd);
    c.address = std::move(address);
    c.waiting_first_byte = false; // the head's deadline runs from the connection
    c.deadline = Clock::now() + options_.request_timeout;
    watch(id, fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
  }
}

void HttpServer::Loop::refuse(int fd, std::string_view why) {
  const std::string body = std::string(why) + "; try again later\n";
  const std::string response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; "
                               "charset=utf-8\r\nConnection: close\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
  // One try: a fresh socket's send buffer takes it; a client that cannot is closed anyway.
  [[maybe_unused]] ssize_t n =
      ::send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  over_limit_warning_.note(std::string("refused a connection: ") + std::string(why));
}

void HttpServer::Loop::read_from(uint64_t id, Connection& c) {
  char buffer[4096];
  while (c.in.size() <= kMaxRequestHeadBytes) {
    const ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      c.peer_done = true;
      break;
    }
    c.in.append(buffer, static_cast<std::size_t>(n));
  }
  handle_buffer(id, c);
}

void HttpServer::Loop::handle_buffer(uint64_t id, Connection& c) {
  const std::size_t length = request_head_length(c.in);
  if (length == 0 || length > kMaxRequestHeadBytes) {
    if (c.in.size() > kMaxRequestHeadBytes) {
      return start_writing(id, c,
                           make_outgoing(431, "text/plain; charset=utf-8",
                                         "the request head is larger than " +
                                             std::to_string(kMaxRequestHeadBytes) + " bytes\n",
                                         false, true));
    }
    if (c.peer_done) return close_connection(id);
    if (!c.in.empty() && c.waiting_first_byte) {
      // The head's deadline runs from its first byte on a kept-alive connection.
      c.waiting_first_byte = false;
      c.deadline = Clock::now() + options_.request_timeout;
    }
    return;
  }
  std::optional<HttpRequest> request = parse_request_head(std::string_view(c.in).substr(0, length));
  c.in.erase(0, length);
  const char* text = "text/plain; charset=utf-8";
  if (!request) return start_writing(id, c, make_outgoing(400, text, "bad request\n", false, true));
  const bool head_only = request->method == "HEAD";
  const bool close = !keeps_alive(*request) || c.peer_done;
  switch (route_request(*request)) {
  case Route::kMetrics: {
    c.state = State::kWorking;
    watch(id, c.fd.get(), 0);
    const auto encoding = request->header("accept-encoding");
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(Job{id, head_only, encoding && accepts_gzip(*encoding), close});
    }
    work_ready_.notify_one();
    return;
  }
  case Route::kHealth:
    return start_writing(id, c, make_outgoing(200, text, "ok\n", head_only, close));
  case Route::kIndex:
    return start_writing(
        id, c, make_outgoing(200, "text/html; charset=utf-8", index_page(), head_only, close));
  case Route::kNotFound:
    return start_writing(id, c,
                         make_outgoing(404, text, "not found; try /metrics\n", head_only, close));
  // Whatever body follows is never read: the connection closes after the answer.
  case Route::kMethodNotAllowed:
    return start_writing(id, c, make_outgoing(405, text, "only GET and HEAD\n", false, true));
  case Route::kBodyRefused:
    return start_writing(
        id, c, make_outgoing(413, text, "request bodies are not accepted\n", false, true));
  case Route::kBad:
    return start_writing(id, c, make_outgoing(400, text, "bad request\n", false, true));
  }
}

void HttpServer::Loop::start_writing(uint64_t id, Connection& c, OutgoingResponse response) {
  c.state = State::kWriting;
  c.out = std::move(response);
  c.written = 0;
  c.deadline = Clock::now() + kWriteTimeout;
  watch(id, c.fd.get(), EPOLLOUT);
  write_to(id, c);
}

void HttpServer::Loop::write_to(uint64_t id, Connection& c) {
  const std::string_view body = c.out.body();
  const std::size_t total = c.out.head.size() + body.size();
  while (c.written < total) {
    iovec parts[2];
    int count = 0;
    if (c.written < c.out.head.size()) {
      parts[count++] = {c.out.head.data() + c.written, c.out.head.size() - c.written};
      parts[count++] = {const_cast<char*>(body.data()), body.size()};
    } else {
      const std::size_t done = c.written - c.out.head.size();
      parts[count++] = {const_cast<char*>(body.data()) + done, body.size() - done};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = ::sendmsg(c.fd.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return; // EPOLLOUT resumes it
    if (n < 0) return close_connection(id);
    c.written += static_cast<std::size_t>(n);
  }
  if (c.peer_done) return close_connection(id);
  if (c.out.close) {
    // Half-close, and read what the client still sends for a moment: closing with unread
    // bytes (the rest of an oversized head) would reset the connection and could destroy
    // the answer before the client reads it.
    ::shutdown(c.fd.get(), SHUT_WR);
    c.state = State::kDraining;
    c.deadline = Clock::now() + kDrainTime;
    watch(id, c.fd.get(), EPOLLIN | EPOLLRDHUP);
    return;
  }
  c.out = OutgoingResponse();
  c.state = State::kReading;
  c.waiting_first_byte = c.in.empty();
  c.deadline = Clock::now() + (c.in.empty() ? kKeepAliveTimeout : options_.request_timeout);
  watch(id, c.fd.get(), EPOLLIN | EPOLLRDHUP);
  if (!c.in.empty()) handle_buffer(id, c); // a request the client pipelined
}

void HttpServer::Loop::drain(uint64_t id, Connection& c) {
  char buffer[4096];
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    return close_connection(id); // the client's end, or an error
  }
}

void HttpServer::Loop::close_connection(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  auto held = per_address_.find(it->second.address);
  if (held != per_address_.end() && --held->second == 0) per_address_.erase(held);
  connections_.erase(it); // closing the descriptor also takes it out of the epoll set
}

void HttpServer::Loop::sweep() {
  const auto now = Clock::now();
  last_sweep_ = now;
  std::vector<uint64_t> expired;
  for (const auto& [id, c] : connections_) {
    if (c.state != State::kWorking && now >= c.deadline) expired.push_back(id);
  }
  for (uint64_t id : expired)
    close_connection(id);
}

void HttpServer::Loop::take_finished() {
  std::vector<std::pair<uint64_t, OutgoingResponse>> finished;
  {
    std::lock_guard lock(mutex_);
    finished.swap(finished_);
  }
  for (auto& [id, response] : finished) {
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second.state != State::kWorking) continue;
    start_writing(id, it->second, std::move(response));
  }
}

Result<ListenAddress> parse_listen_address(const std::string& listen) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "listen address '" + listen + "'", why)
        .with_hint("use ADDR:PORT, [IPV6]:PORT or :PORT (every IPv4 address)");
  };
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  const std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad("the port must be a number 0-65535");
  }
  ListenAddress out;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(out.address);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &in6.sin6_addr) != 1)
      return bad("'" + host + "' is not an IPv6 address");
    out.length = sizeof in6;
    return out;
  }
  auto& in = reinterpret_cast<sockaddr_in&>(out.address);
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<uint16_t>(port));
  in.sin_addr.s_addr = htonl(INADDR_ANY);
  if (!host.empty() && inet_pton(AF_INET, host.c_str(), &in.sin_addr) != 1)
    return bad("'" + host + "' is not an IPv4 address (names are not resolved)");
  out.length = sizeof in;
  return out;
}

std::shared_ptr<Exposition> SharedScrape::get() {
  std::unique_lock lock(mutex_);
  if (running_) {
    const uint64_t generation = generation_;
    done_.wait(lock, [&] { return generation_ != generation; });
    return last_;
  }
  running_ = true;
  lock.unlock();
  auto exposition = std::make_shared<Exposition>();
  try {
    exposition->text = render_text(collect_());
  } catch (const std::exception& e) {
    // Out of memory, most likely; the waiting requests must not wait forever.
    spdlog::error("scrape failed: {}", e.what());
    exposition->failed = true;
  }
  lock.lock();
  last_ = exposition;
  running_ = false;
  ++generation_;
  done_.notify_all();
  return exposition;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpOptions& options,
                                                      SharedScrape::Collect collect) {
  FABRIC_ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(options.listen));
  if (options.threads < 1 || options.max_connections < 1 ||
      options.max_connections_per_address < 1) {
    return Error(ErrorCode::kInvalidArgument, "http options",
                 "threads, max_connections and max_connections_per_address must be at least 1");
  }
  std::unique_ptr<HttpServer> server(new HttpServer(options, std::move(collect)));
  auto failed = [&](const char* call) {
    return Error::from_errno(errno, call, "listening on " + options.listen)
        .with_hint("is another process using the port? --listen picks another");
  };
  server->listen_fd_.reset(
      ::socket(address.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!server->listen_fd_) return failed("socket");
  const int one = 1;
  ::setsockopt(server->listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(server->listen_fd_.get(), reinterpret_cast<const sockaddr*>(&address.address),
             address.length) != 0)
    return failed("bind");
  if (::listen(server->listen_fd_.get(), SOMAXCONN) != 0) return failed("listen");
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(server->listen_fd_.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  server->port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                        : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
  server->loop_ = std::make_unique<Loop>(server->options_, server->listen_fd_.get());
  FABRIC_TRY(server->loop_->init());
  server->loop_thread_ = std::thread([s = server.get()] { s->loop_->run(); });
  for (unsigned i = 0; i < options.threads; ++i)
    server->workers_.emplace_back([s = server.get()] { s->work(); });
  return server;
}

HttpServer::HttpServer(const HttpOptions& options, SharedScrape::Collect collect)
    : options_(options), scrape_(std::move(collect)) {}

HttpServer::~HttpServer() {
  if (loop_) loop_->stop();
  if (loop_thread_.joinable()) loop_thread_.join();
  for (auto& worker : workers_)
    worker.join();
}

void HttpServer::work() {
  while (std::optional<Job> job = loop_->next_job()) {
    std::shared_ptr<Exposition> exposition = scrape_.get();
    OutgoingResponse response;
    if (exposition->failed) {
      response = make_outgoing(500, "text/plain; charset=utf-8", "scrape failed; see the log\n",
                               job->head_only, job->close);
    } else {
      if (job->gzip) {
        std::call_once(exposition->gzip_once, [&] {
          auto compressed = gzip_compress(exposition->text);
          if (compressed.ok()) {
            exposition->gzip = std::move(*compressed);
          } else {
            spdlog::warn("gzip: {}; serving uncompressed", compressed.error().message());
          }
        });
      }
      const bool gzip = job->gzip && !exposition->gzip.empty();
      const std::string& body = gzip ? exposition->gzip : exposition->text;
      response.head = response_head(200, kTextContentType, body.size(), gzip, job->close);
      response.close = job->close;
      response.exposition = exposition;
      response.gzip = gzip;
      response.head_only = job->head_only;
    }
    loop_->finish(job->id, std::move(response));
  }
}

} // namespace fabric::exporters
