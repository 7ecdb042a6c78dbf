#include "exporters/http_server.h"

#include <arpa/inet.h>

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>

#include <charconv>
#include <cstring>
#include <map>
#include <shared_mutex>
#include <string_view>

#include "common/build_info.h"
#include "common/log.h"
#include "exporters/exposition.h"
#include "exporters/gzip.h"

namespace fabric::exporters {
namespace {

// civetweb's C callbacks carry no pointer of ours (CivetServer keeps its user data), so the
// server is found by its civetweb context, registered by init_context, which runs on the
// starting thread before any request is accepted.
std::shared_mutex g_servers_mutex;
std::map<const mg_context*, HttpServer*> g_servers;
thread_local HttpServer* t_starting = nullptr;

void on_init_context(const mg_context* context) {
  if (t_starting == nullptr) return;
  t_starting->bind_context(context);
  std::unique_lock lock(g_servers_mutex);
  g_servers[context] = t_starting;
}

int on_begin_request(mg_connection* conn) {
  HttpServer* server = nullptr;
  {
    std::shared_lock lock(g_servers_mutex);
    auto it = g_servers.find(mg_get_context(conn));
    if (it != g_servers.end()) server = it->second;
  }
  return server != nullptr ? server->handle(conn) : 0;
}

int respond(mg_connection* conn, int status, const char* content_type, std::string_view body,
            bool head, const char* content_encoding = nullptr) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", content_type, -1);
  if (content_encoding != nullptr)
    mg_response_header_add(conn, "Content-Encoding", content_encoding, -1);
  const std::string length = std::to_string(body.size());
  mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
  if (status == 405) mg_response_header_add(conn, "Allow", "GET, HEAD", -1);
  mg_response_header_send(conn);
  if (!head) mg_write(conn, body.data(), body.size());
  return status;
}

// Whether an Accept-Encoding header value accepts gzip: "gzip", "gzip;q=0.5", "*"; not
// "gzip;q=0".
bool accepts_gzip(const char* header) {
  if (header == nullptr) return false;
  std::string_view rest(header);
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::size_t semi = item.find(';');
    std::string_view token = item.substr(0, semi);
    std::string_view params = semi == std::string_view::npos ? "" : item.substr(semi + 1);
    auto trim = [](std::string_view s) {
      while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
      return s;
    };
    token = trim(token);
    if (token != "gzip" && token != "*") continue;
    params = trim(params);
    if (params.starts_with("q=")) {
      std::string_view q = params.substr(2);
      if (q.find_first_not_of("0.") == std::string_view::npos) return false; // q=0, q=0.0
    }
    return true;
  }
  return false;
}

std::string index_page() {
  return "<!DOCTYPE html>\n<html><head><title>fabric-exporter</title></head><body>\n"
         "<h1>fabric-exporter</h1>\n<p>" +
         std::string(build_info().version) + " (git " + build_info().git_revision +
         ")</p>\n<ul>\n<li><a href=\"/metrics\">/metrics</a>: Prometheus text format "
         "0.0.4</li>\n<li><a href=\"/healthz\">/healthz</a>: liveness</li>\n</ul>\n"
         "</body></html>\n";
}

} // namespace

Result<std::string> civetweb_listen_spec(const std::string& listen) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "listen address '" + listen + "'", why)
        .with_hint("use ADDR:PORT, [IPV6]:PORT or :PORT (every IPv4 address)");
  };
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad("the port must be a number 0-65535");
  }
  if (host.empty()) return port_text;
  unsigned char addr[16];
  if (host.front() == '[' && host.back() == ']') {
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), addr) != 1)
      return bad("'" + host + "' is not an IPv6 address");
  } else if (inet_pton(AF_INET, host.c_str(), addr) != 1) {
    return bad("'" + host + "' is not an IPv4 address (names are not resolved)");
  }
  return host + ":" + port_text;
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
  FABRIC_ASSIGN_OR_RETURN(std::string spec, civetweb_listen_spec(options.listen));
  if (options.threads < 2) {
    return Error(ErrorCode::kInvalidArgument, "http threads",
                 "at least 2: one idle client must not block every scrape");
  }
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(collect)));
  CivetCallbacks callbacks;
  callbacks.init_context = on_init_context;
  callbacks.begin_request = on_begin_request;
  std::vector<std::string> civet_options = {
      "listening_ports",    spec,
      "num_threads",        std::to_string(options.threads),
      "request_timeout_ms", std::to_string(options.request_timeout.count()),
  };
  t_starting = server.get();
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(civet_options, &callbacks);
  } catch (const std::exception& e) {
    t_starting = nullptr;
    if (server->context_ != nullptr) {
      std::unique_lock lock(g_servers_mutex);
      g_servers.erase(server->context_);
    }
    return Error(ErrorCode::kSystem, "listening on " + options.listen, e.what())
        .with_hint("is another process using the port? --listen picks another");
  }
  t_starting = nullptr;
  return server;
}

HttpServer::HttpServer(SharedScrape::Collect collect) : scrape_(std::move(collect)) {}

HttpServer::~HttpServer() {
  exposer_.reset(); // stops civetweb and waits for its threads
  std::unique_lock lock(g_servers_mutex);
  g_servers.erase(context_);
}

std::vector<int> HttpServer::ports() const {
  return exposer_->GetListeningPorts();
}

int HttpServer::handle(mg_connection* conn) {
  const mg_request_info* request = mg_get_request_info(conn);
  const std::string_view method = request->request_method ? request->request_method : "";
  const std::string_view uri = request->local_uri ? request->local_uri : "";
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return respond(conn, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", false);
  }
  if (uri == "/metrics") {
    std::shared_ptr<Exposition> exposition = scrape_.get();
    if (exposition->failed)
      return respond(conn, 500, "text/plain; charset=utf-8", "scrape failed; see the log\n", head);
    if (accepts_gzip(mg_get_header(conn, "Accept-Encoding"))) {
      std::call_once(exposition->gzip_once, [&] {
        auto compressed = gzip_compress(exposition->text);
        if (compressed.ok()) {
          exposition->gzip = std::move(*compressed);
        } else {
          spdlog::warn("gzip: {}; serving uncompressed", compressed.error().message());
        }
      });
      if (!exposition->gzip.empty())
        return respond(conn, 200, kTextContentType, exposition->gzip, head, "gzip");
    }
    return respond(conn, 200, kTextContentType, exposition->text, head);
  }
  if (uri == "/healthz") return respond(conn, 200, "text/plain; charset=utf-8", "ok\n", head);
  if (uri == "/") return respond(conn, 200, "text/html; charset=utf-8", index_page(), head);
  return respond(conn, 404, "text/plain; charset=utf-8", "not found; try /metrics\n", head);
}

} // namespace fabric::exporters
