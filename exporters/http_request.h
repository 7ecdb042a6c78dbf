// The request side of the exporter's HTTP/1.1: a request head parsed strictly, and what the
// server answers to it. Pure logic, so every hostile input is a unit test.
//
// Only what a scraper sends is accepted: GET or HEAD of an origin-form target, no body.
// Targets are matched byte for byte before the query and never percent-decoded, so
// "/metrics%00.html" is not "/metrics".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabric::exporters {

// Larger heads are answered 431 and the connection closed; scrapers send a few hundred bytes.
inline constexpr std::size_t kMaxRequestHeadBytes = 8192;

struct HttpRequest {
  std::string method;
  std::string target;
  bool http10 = false;
  std::vector<std::pair<std::string, std::string>> headers; // names lowercased

  // The first header called `name` (lowercase), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

// The length of the head at the start of `buffer` including its blank line, or 0 while it
// is incomplete.
std::size_t request_head_length(std::string_view buffer);

// `head` without its final blank line. nullopt when it is not a well-formed HTTP/1.0 or
// 1.1 request head (answered 400).
std::optional<HttpRequest> parse_request_head(std::string_view head);

enum class Route { kMetrics, kHealth, kIndex, kNotFound, kMethodNotAllowed, kBodyRefused, kBad };

// What the server does with `request`: a body (Content-Length above 0, Transfer-Encoding)
// is refused before any of it is read.
Route route_request(const HttpRequest& request);

// Whether the connection stays open after the response: HTTP/1.1 without
// "Connection: close".
bool keeps_alive(const HttpRequest& request);

// Whether an Accept-Encoding value accepts gzip: "gzip", "gzip;q=0.5", "*"; not when its
// weight is 0, negative, above 1 or not a number ("gzip;q=-1", "gzip;q=0").
bool accepts_gzip(std::string_view accept_encoding);

} // namespace fabric::exporters
