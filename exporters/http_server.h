// The HTTP side: prometheus-cpp's Exposer (civetweb) serves /metrics, /healthz and a small
// index page.
//
// prometheus-cpp 1.0.1's own /metrics handler is not used: it answers with
// "Content-Type: text/plain; charset=utf-8" (no format version), adds exposer_* families
// outside the fabric_ namespace, and collects under one lock per request. Requests are
// answered from civetweb's begin_request hook instead, in text format 0.0.4
// (exposition.h) with its Content-Type; 1.0.1 has no OpenMetrics serializer, and
// Prometheus takes 0.0.4 when it asked for OpenMetrics and got text. Concurrent scrapes
// share one collection: a request that arrives while one runs waits for it and gets its
// result.
//
// civetweb gives each connection a worker thread while it reads the request; a client
// that connects and sends nothing holds one worker until request_timeout, so `threads`
// bounds how many such clients can be absorbed without delaying real scrapes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/result.h"

namespace prometheus {
class Exposer;
}
struct mg_connection;
struct mg_context;

namespace fabric::exporters {

inline constexpr int kDefaultPort = 10900;
inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

struct HttpOptions {
  std::string listen = ":" + std::to_string(kDefaultPort); // ADDR:PORT, [ADDR]:PORT or :PORT
  unsigned threads = 8;
  std::chrono::milliseconds request_timeout{10000};
};

// "0.0.0.0:9100" -> "0.0.0.0:9100", ":9100" -> "9100" (every IPv4 address),
// "[::1]:9100" -> "[::1]:9100": civetweb's listening_ports syntax. Errors name the value.
Result<std::string> civetweb_listen_spec(const std::string& listen);

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

  // The ports it listens on (the real one when the option asked for port 0).
  std::vector<int> ports() const;

  // The civetweb hook; public for the C callback, not for callers.
  int handle(mg_connection* conn);
  void bind_context(const mg_context* context) { context_ = context; }

private:
  explicit HttpServer(SharedScrape::Collect collect);

  SharedScrape scrape_;
  const mg_context* context_ = nullptr;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

} // namespace fabric::exporters
