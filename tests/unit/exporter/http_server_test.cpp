// The HTTP side on loopback: content types, gzip, /healthz and /, concurrent scrapes that
// share one collection, and a client that connects and sends nothing.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "exporters/http_server.h"
#include "tests/unit/exporter/http_client.h"

namespace fabric::exporters {
namespace {

using testing::http_get;

std::vector<prometheus::MetricFamily> one_family(double value) {
  prometheus::MetricFamily f;
  f.name = "fabric_test_value";
  f.help = "A test value.";
  f.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric m;
  m.label = {{"source", "test"}};
  m.gauge.value = value;
  f.metric.push_back(m);
  return {f};
}

// One server for the tests that do not need their own.
class HttpServerTest : public ::testing::Test {
protected:
  static std::unique_ptr<HttpServer> start(unsigned threads) {
    HttpOptions options;
    options.listen = "127.0.0.1:0";
    options.threads = threads;
    auto server = HttpServer::start(options, [] { return one_family(42); });
    EXPECT_TRUE(server.ok()) << server.error().message();
    if (!server.ok() || (*server)->ports().empty()) return nullptr;
    return std::move(*server);
  }
  static void SetUpTestSuite() { shared_ = start(8); }
  static void TearDownTestSuite() { shared_.reset(); }
  void SetUp() override {
    ASSERT_NE(shared_, nullptr);
    port_ = shared_->ports().front();
  }
  static std::unique_ptr<HttpServer> shared_;
  int port_ = 0;
};
std::unique_ptr<HttpServer> HttpServerTest::shared_;

TEST_F(HttpServerTest, MetricsInTextFormatWithItsVersion) {
  auto r = http_get(port_, "/metrics");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r->body.find("# TYPE fabric_test_value gauge\nfabric_test_value{source=\"test\"} 42\n"),
            std::string::npos)
      << r->body;
  EXPECT_EQ(r->body.find("exposer_"), std::string::npos) << "no families outside fabric_";
  EXPECT_EQ(std::to_string(r->body.size()), r->headers["content-length"]);
}

TEST_F(HttpServerTest, GzipWhenTheScraperAcceptsIt) {
  auto plain = http_get(port_, "/metrics");
  auto r = http_get(port_, "/metrics", "Accept-Encoding: gzip");
  ASSERT_TRUE(r.ok() && plain.ok());
  EXPECT_EQ(r->headers["content-encoding"], "gzip");
  auto text = testing::gunzip(r->body);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, plain->body);
  auto refused = http_get(port_, "/metrics", "Accept-Encoding: gzip;q=0, identity");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->headers.count("content-encoding"), 0u);
}

TEST_F(HttpServerTest, HealthIndexAndErrors) {
  auto health = http_get(port_, "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  auto index = http_get(port_, "/");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->headers["content-type"], "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("href=\"/metrics\""), std::string::npos);
  EXPECT_NE(index->body.find("href=\"/healthz\""), std::string::npos);
  auto missing = http_get(port_, "/nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  auto post = http_get(port_, "/metrics", "", 30, "POST");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 405);
  auto head = http_get(port_, "/metrics", "", 30, "HEAD");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
}

TEST_F(HttpServerTest, AHundredConcurrentScrapesAllSucceed) {
  constexpr int kClients = 100;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    // From four addresses: one address may hold max_connections_per_address (32).
    clients.emplace_back([&, i] {
      auto r = http_get(port_, "/metrics", "Accept-Encoding: gzip", 30, "GET",
                        "127.0.0." + std::to_string(2 + i % 4));
      if (r.ok() && r->status == 200 && r->headers["content-encoding"] == "gzip") ++ok;
    });
  }
  for (auto& t : clients)
    t.join();
  EXPECT_EQ(ok.load(), kClients);
}

TEST_F(HttpServerTest, AClientThatSendsNothingDoesNotBlockOthers) {
  auto server = start(2); // one worker for the idle client, one for everyone else
  ASSERT_NE(server, nullptr);
  port_ = server->ports().front();
  auto idle = testing::connect_idle(port_);
  ASSERT_TRUE(idle.ok());
  auto r = http_get(port_, "/metrics");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  // The idle connection is still open (not dropped to make room): a read finds no data
  // and no end of stream.
  char byte;
  EXPECT_EQ(::recv(*idle, &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  ::close(*idle);
}

TEST(HttpListen, AddressesWithClearErrors) {
  auto any = parse_listen_address(":10900");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->address.ss_family, AF_INET);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in&>(any->address).sin_addr.s_addr, INADDR_ANY);
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in&>(any->address).sin_port), 10900);
  auto v6 = parse_listen_address("[::1]:9100");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->address.ss_family, AF_INET6);
  auto bad = parse_listen_address("localhost:9100");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(parse_listen_address("127.0.0.1").ok());
  EXPECT_FALSE(parse_listen_address("127.0.0.1:70000").ok());
  EXPECT_FALSE(parse_listen_address("[::1:9100").ok());
}

TEST(HttpListen, APortInUseIsAClearError) {
  HttpOptions options;
  options.listen = "127.0.0.1:0";
  auto first = HttpServer::start(options, [] { return one_family(1); });
  ASSERT_TRUE(first.ok());
  options.listen = "127.0.0.1:" + std::to_string((*first)->ports().front());
  auto second = HttpServer::start(options, [] { return one_family(1); });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("listening on " + options.listen), std::string::npos)
      << second.error().message();
}

} // namespace
} // namespace fabric::exporters
