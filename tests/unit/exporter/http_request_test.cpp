// Request heads as a hostile client writes them: what is parsed, refused and routed.
#include <gtest/gtest.h>

#include "exporters/http_request.h"

namespace fabric::exporters {
namespace {

Route route_of(const std::string& head) {
  auto request = parse_request_head(head);
  return request ? route_request(*request) : Route::kBad;
}

TEST(HttpRequest, AScrapersRequestIsParsed) {
  const std::string head =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: node:10900\r\n"
      "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
  EXPECT_EQ(request_head_length(head), head.size());
  EXPECT_EQ(request_head_length(head.substr(0, head.size() - 1)), 0u);
  auto request = parse_request_head(head);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "GET");
  EXPECT_EQ(request->target, "/metrics?x=1");
  EXPECT_EQ(request->header("accept-encoding"), "gzip");
  EXPECT_EQ(route_request(*request), Route::kMetrics);
  EXPECT_TRUE(keeps_alive(*request));
}

TEST(HttpRequest, TargetsAreMatchedAsSentNeverDecoded) {
  EXPECT_EQ(route_of("GET /metrics%00.html HTTP/1.1\r\n\r\n"), Route::kNotFound);
  EXPECT_EQ(route_of("GET /%6detrics HTTP/1.1\r\n\r\n"), Route::kNotFound);
  EXPECT_EQ(route_of("GET /metrics/ HTTP/1.1\r\n\r\n"), Route::kNotFound);
  EXPECT_EQ(route_of("GET /healthz HTTP/1.0\r\n\r\n"), Route::kHealth);
  EXPECT_EQ(route_of("HEAD / HTTP/1.1\r\n\r\n"), Route::kIndex);
  // Raw bytes a path cannot hold: a NUL, a tab, a byte above ASCII, an absolute form.
  EXPECT_FALSE(parse_request_head(std::string("GET /metrics\0.html HTTP/1.1\r\n\r\n", 31)));
  EXPECT_FALSE(parse_request_head("GET /met\trics HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /m\xc3\xa9trics HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET http://x/metrics HTTP/1.1\r\n\r\n"));
}

TEST(HttpRequest, MalformedHeadsAreRefused) {
  EXPECT_FALSE(parse_request_head("GET /metrics\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /metrics HTTP/2.0\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET  /metrics HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("G(T /metrics HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /metrics HTTP/1.1\r\nno colon\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /metrics HTTP/1.1\r\nA: b\x01\r\n\r\n"));
  EXPECT_FALSE(parse_request_head("GET /metrics HTTP/1.1\r\nBad Name: b\r\n\r\n"));
}

TEST(HttpRequest, BodiesAreRefusedBeforeTheyAreRead) {
  EXPECT_EQ(route_of("POST /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n"),
            Route::kMethodNotAllowed);
  EXPECT_EQ(route_of("GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n"),
            Route::kBodyRefused);
  EXPECT_EQ(route_of("GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Route::kBodyRefused);
  EXPECT_EQ(route_of("GET /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), Route::kMetrics);
  EXPECT_EQ(route_of("GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), Route::kBad);
  EXPECT_EQ(route_of("GET /metrics HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n"),
            Route::kBodyRefused);
}

TEST(HttpRequest, ConnectionsCloseWhenAskedOrOnHttp10) {
  EXPECT_FALSE(keeps_alive(*parse_request_head("GET / HTTP/1.0\r\n\r\n")));
  EXPECT_FALSE(keeps_alive(*parse_request_head("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n")));
  EXPECT_TRUE(keeps_alive(*parse_request_head("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n")));
}

TEST(HttpRequest, GzipOnlyWithAPositiveWeight) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("GZIP"));
  EXPECT_TRUE(accepts_gzip("gzip;q=0.5"));
  EXPECT_TRUE(accepts_gzip("identity, gzip; q=1"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip("gzip;q=1.000"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0.000"));
  EXPECT_FALSE(accepts_gzip("gzip;q=-1"));
  EXPECT_FALSE(accepts_gzip("gzip;q=-0.5"));
  EXPECT_FALSE(accepts_gzip("gzip;q=2"));
  EXPECT_FALSE(accepts_gzip("gzip;q=nan"));
  EXPECT_FALSE(accepts_gzip("gzip;q="));
  EXPECT_FALSE(accepts_gzip("*;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0, *")); // gzip named outranks *
}

} // namespace
} // namespace fabric::exporters
