// The HTTP side: /metrics, /healthz and a small index page, over HTTP/1.1 on one event
// loop (epoll) and a few workers.
//
// Why not a thread per connection (civetweb, which prometheus-cpp's Exposer uses): a client
// that connects and sends nothing, or one header byte a second, holds its thread until the
// request timeout, and a few hundred such clients stopped every scrape. Here one thread
// reads every connection without blocking; a request head must arrive whole within
// `request_timeout` of the connection (or of the previous response), within
// kMaxRequestHeadBytes; each address holds at most `max_connections_per_address`
// connections and the server `max_connections`, more are answered 503 and closed at once;
// a request with a body is refused before any of it is read. Workers only see complete
// /metrics requests, and responses are written by the event loop, so a client that does
// not read its response holds memory (a shared exposition), not a worker.
//
// /metrics is text format 0.0.4 (exposition.h) with its Content-Type; Prometheus takes it
// when it asked for OpenMetrics. Concurrent scrapes share one collection: a request that
// arrives while one runs waits for it and gets its result.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/fd.h"
#include "common/result.h"

namespace fabric::exporters {

inline constexpr int kDefaultPort = 10900;
inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

struct HttpOptions {
  std::string listen = ":" + std::to_string(kDefaultPort); // ADDR:PORT, [ADDR]:PORT or :PORT
  unsigned threads = 8; // workers that collect and compress; reading and writing is the loop's
  std::chrono::milliseconds request_timeout{10000}; // for a whole request head to arrive
  unsigned max_connections = 1024;
  unsigned max_connections_per_address = 32;
};

struct ListenAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
};

// "0.0.0.0:9100", ":9100" (every IPv4 address), "[::1]:9100". Names are not resolved.
// Errors name the value.
Result<ListenAddress> parse_listen_address(const std::string& listen);

// One serialized exposition, shared by the requests that asked for it at the same time.
struct Exposition {
  std::string text;
  bool failed = false; // the collection threw (out of memory): answered with 500
  std::once_flag gzip_once;
  std::string gzip; // empty when compression failed: the plain text is served
};

// Runs `collect` for the first of concurrent callers; the others wait and share its result.
class SharedScrape {
public:
  using Collect = std::function<std::vector<prometheus::MetricFamily>()>;
  explicit SharedScrape(Collect collect) : collect_(std::move(collect)) {}
  std::shared_ptr<Exposition> get();

private:
  Collect collect_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool running_ = false;
  uint64_t generation_ = 0;
  std::shared_ptr<Exposition> last_;
};

class HttpServer {
public:
  static Result<std::unique_ptr<HttpServer>> start(const HttpOptions& options,
                                                   SharedScrape::Collect collect);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port it listens on (the real one when the option asked for port 0).
  std::vector<int> ports() const { return {port_}; }

  struct Job;
  struct Loop;

private:
  HttpServer(const HttpOptions& options, SharedScrape::Collect collect);
  void work();

  HttpOptions options_;
  SharedScrape scrape_;
  UniqueFd listen_fd_;
  int port_ = 0;
  std::unique_ptr<Loop> loop_;
  std::thread loop_thread_;
  std::vector<std::thread> workers_;
};

} // namespace fabric::exporters
