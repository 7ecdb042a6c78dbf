// fabric-exporter's HTTP server against hostile clients on loopback: a thousand idle and
// slowloris connections from one address while another address scrapes, the per-address
// limit, the request head's deadline, bodies refused unread, oversized heads, paths that
// only look like /metrics, and gzip refused by weight.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "exporters/http_server.h"
#include "tests/unit/exporter/http_client.h"

namespace fabric::exporters {
namespace {

using testing::connect_idle;
using testing::http_get;

// Prometheus' own address in these tests; the attackers use 127.0.0.1.
constexpr const char* kScraper = "127.0.0.2";

std::vector<prometheus::MetricFamily> families() {
  prometheus::MetricFamily f;
  f.name = "fabric_test_value";
  f.help = "A test value.";
  f.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric m;
  m.gauge.value = 1;
  f.metric.push_back(m);
  return {f};
}

std::unique_ptr<HttpServer> serve(HttpOptions options) {
  options.listen = "127.0.0.1:0";
  auto server = HttpServer::start(options, families);
  EXPECT_TRUE(server.ok()) << server.error().message();
  return server.ok() ? std::move(*server) : nullptr;
}

void send_text(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// What the server sent before it closed the connection, waiting at most `seconds`;
// `closed` says whether it did close.
std::string read_until_closed(int fd, int seconds, bool& closed) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buffer[4096];
  closed = false;
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      got.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    closed = n == 0 || errno == ECONNRESET;
    return got;
  }
}

TEST(HttpHostile, AThousandSlowAndIdleConnectionsDoNotBlockAnotherClientsScrapes) {
  HttpOptions options;
  options.threads = 2;
  // Every attacking connection is held (no per-address refusal, no deadline in the test's
  // time): the event loop alone must keep the scraper served.
  options.request_timeout = std::chrono::seconds(60);
  options.max_connections = 2000;
  options.max_connections_per_address = 2000;
  auto server = serve(options);
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();

  constexpr int kIdle = 500;
  constexpr int kSlow = 500;
  std::vector<UniqueFd> idle, slow;
  for (int i = 0; i < kIdle; ++i) {
    auto fd = connect_idle(port);
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    idle.emplace_back(*fd);
  }
  for (int i = 0; i < kSlow; ++i) {
    auto fd = connect_idle(port);
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    slow.emplace_back(*fd);
    send_text(slow.back().get(), "GET /metrics HTTP/1.1\r\nX-");
  }
  // Slowloris: one more header byte on every slow connection, round after round, while
  // the scraper works.
  std::atomic<bool> done{false};
  std::thread loris([&] {
    for (int round = 0; round < 200 && !done; ++round) {
      for (auto& fd : slow)
        ::send(fd.get(), "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  int succeeded = 0;
  constexpr int kScrapes = 20;
  for (int i = 0; i < kScrapes; ++i) {
    auto r = http_get(port, "/metrics", "Accept-Encoding: gzip", 10, "GET", kScraper);
    if (r.ok() && r->status == 200 && r->headers["content-encoding"] == "gzip") ++succeeded;
  }
  done = true;
  loris.join();
  EXPECT_EQ(succeeded, kScrapes);
  // The attackers' connections were held, not dropped to make room.
  char byte;
  EXPECT_EQ(::recv(idle.front().get(), &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(::recv(slow.back().get(), &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(HttpHostile, AnAddressOverItsLimitIsToldSoAndOthersAreServed) {
  HttpOptions options;
  options.max_connections_per_address = 4;
  auto server = serve(options);
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();
  std::vector<UniqueFd> held;
  for (int i = 0; i < 4; ++i)
    held.emplace_back(*connect_idle(port));
  // The server counts a connection once it accepted it: a scrape from the same address
  // that is answered shows the first four are in.
  auto over = connect_idle(port);
  ASSERT_TRUE(over.ok());
  UniqueFd fifth(*over);
  bool closed = false;
  const std::string answer = read_until_closed(fifth.get(), 10, closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503 ")) << answer;
  EXPECT_NE(answer.find("max_connections_per_address"), std::string::npos) << answer;
  auto r = http_get(port, "/metrics", "", 10, "GET", kScraper);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  // A connection that ends gives its place back.
  held.pop_back();
  std::string status;
  for (int attempt = 0; attempt < 100 && status != "200"; ++attempt) {
    auto again = http_get(port, "/healthz", "", 10);
    status = again.ok() ? std::to_string(again->status) : again.error().message();
    if (status != "200") std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, "200");
}

TEST(HttpHostile, SlowAndIdleHeadsAreCutAtTheirDeadline) {
  HttpOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  auto server = serve(options);
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();
  UniqueFd idle(*connect_idle(port));
  bool closed = false;
  EXPECT_EQ(read_until_closed(idle.get(), 10, closed), "");
  EXPECT_TRUE(closed) << "an idle connection outlived request_timeout";
  // One header byte every 20 ms never completes the head before the server cuts it off.
  UniqueFd slow(*connect_idle(port));
  send_text(slow.get(), "GET /metrics HTTP/1.1\r\n");
  bool cut = false;
  for (int i = 0; i < 500 && !cut; ++i) {
    ::send(slow.get(), "a", 1, MSG_NOSIGNAL);
    pollfd p{slow.get(), POLLIN, 0};
    cut = ::poll(&p, 1, 20) == 1;
  }
  EXPECT_TRUE(cut) << "10 s of a byte every 20 ms were accepted";
  read_until_closed(slow.get(), 10, closed);
  EXPECT_TRUE(closed);
}

TEST(HttpHostile, AHugeBodyIsRefusedBeforeAnyOfItIsSent) {
  HttpOptions options;
  options.threads = 1;
  auto server = serve(options);
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();
  // The body never comes: only an answer that does not wait for it arrives in 5 s.
  auto post = http_get(port, "/metrics", "Content-Length: 1000000000000", 5, "POST");
  ASSERT_TRUE(post.ok()) << post.error().message();
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->headers["connection"], "close");
  auto get = http_get(port, "/metrics", "Content-Length: 1000000000000", 5, "GET");
  ASSERT_TRUE(get.ok()) << get.error().message();
  EXPECT_EQ(get->status, 413);
}

TEST(HttpHostile, OversizedAndMalformedHeadsAreAnsweredAndClosed) {
  auto server = serve({});
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();
  auto huge = http_get(port, "/metrics", "X-Big: " + std::string(16384, 'a'), 10);
  ASSERT_TRUE(huge.ok()) << huge.error().message();
  EXPECT_EQ(huge->status, 431);
  UniqueFd junk(*connect_idle(port));
  send_text(junk.get(), "\x16\x03\x01 not http at all\r\n\r\n");
  bool closed = false;
  EXPECT_TRUE(read_until_closed(junk.get(), 10, closed).starts_with("HTTP/1.1 400 "));
  EXPECT_TRUE(closed);
}

TEST(HttpHostile, PathsThatOnlyLookLikeMetricsAreNotServed) {
  auto server = serve({});
  ASSERT_NE(server, nullptr);
  const int port = server->ports().front();
  for (const char* path : {"/metrics%00.html", "/%6detrics", "/metrics/.."}) {
    auto r = http_get(port, path, "", 10);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->status, 404) << path;
  }
  auto negative = http_get(port, "/metrics", "Accept-Encoding: gzip;q=-1", 10);
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->status, 200);
  EXPECT_EQ(negative->headers.count("content-encoding"), 0u);
  EXPECT_NE(negative->body.find("fabric_test_value 1"), std::string::npos);
}

TEST(HttpHostile, KeptAliveConnectionsServeOneRequestAfterAnother) {
  auto server = serve({});
  ASSERT_NE(server, nullptr);
  UniqueFd fd(*connect_idle(server->ports().front()));
  // Two requests in one write (pipelined), then the connection closes after the second.
  send_text(fd.get(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  bool closed = false;
  const std::string got = read_until_closed(fd.get(), 10, closed);
  EXPECT_TRUE(closed);
  const std::size_t first = got.find("HTTP/1.1 200 OK");
  ASSERT_NE(first, std::string::npos) << got;
  EXPECT_NE(got.find("HTTP/1.1 200 OK", first + 1), std::string::npos) << got;
}

} // namespace
} // namespace fabric::exporters
