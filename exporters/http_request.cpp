#include "exporters/http_request.h"

#include <algorithm>
#include <charconv>

#include "common/strings.h"

namespace fabric::exporters {
namespace {

// RFC 9110's tchar: what a method or header name is made of.
bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

// Visible ASCII only: no space, control byte, DEL or byte above 0x7e in a target.
bool is_target(std::string_view s) {
  return s.starts_with('/') &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A qvalue (RFC 9110 12.4.2): 0 to 1 with at most three decimals; nullopt otherwise.
std::optional<double> parse_qvalue(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text[0] != '0' && text[0] != '1')) return std::nullopt;
  double q = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), q);
  if (ec != std::errc() || end != text.data() + text.size() || q < 0 || q > 1) return std::nullopt;
  return q;
}

} // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return std::string_view(v);
  }
  return std::nullopt;
}

std::size_t request_head_length(std::string_view buffer) {
  const std::size_t end = buffer.find("\r\n\r\n");
  return end == std::string_view::npos ? 0 : end + 4;
}

std::optional<HttpRequest> parse_request_head(std::string_view head) {
  if (head.ends_with("\r\n\r\n")) head.remove_suffix(4);
  std::size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  head.remove_prefix(line_end == std::string_view::npos ? head.size() : line_end + 2);

  HttpRequest request;
  const std::size_t first = line.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!is_token(method) || !is_target(target)) return std::nullopt;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return std::nullopt;
  request.method = method;
  request.target = target;
  request.http10 = version == "HTTP/1.0";

  while (!head.empty()) {
    line_end = head.find("\r\n");
    line = head.substr(0, line_end);
    head.remove_prefix(line_end == std::string_view::npos ? head.size() : line_end + 2);
    // A line that starts with a blank continues the previous one (obsolete folding): refused,
    // as RFC 9112 lets a server do, so no two parsers disagree about a header.
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return std::nullopt;
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return std::nullopt;
    request.headers.emplace_back(lowercase(line.substr(0, colon)), std::string(value));
  }
  return request;
}

Route route_request(const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return Route::kMethodNotAllowed;
  if (request.header("transfer-encoding")) return Route::kBodyRefused;
  for (const auto& [name, value] : request.headers) {
    if (name != "content-length") continue;
    uint64_t length = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      return Route::kBad;
    if (length > 0) return Route::kBodyRefused;
  }
  const std::string_view target = request.target;
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/metrics") return Route::kMetrics;
  if (path == "/healthz") return Route::kHealth;
  if (path == "/") return Route::kIndex;
  return Route::kNotFound;
}

bool keeps_alive(const HttpRequest& request) {
  if (request.http10) return false;
  for (const auto& [name, value] : request.headers) {
    if (name == "connection" && lowercase(value).find("close") != std::string::npos) return false;
  }
  return true;
}

bool accepts_gzip(std::string_view accept_encoding) {
  std::optional<double> gzip_q;
  std::optional<double> any_q;
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding.remove_prefix(comma == std::string_view::npos ? accept_encoding.size()
                                                                  : comma + 1);
    const std::size_t semi = item.find(';');
    const std::string_view coding = trim(item.substr(0, semi));
    double q = 1;
    if (semi != std::string_view::npos) {
      const std::string_view params = trim(item.substr(semi + 1));
      if (!params.starts_with("q=") && !params.starts_with("Q=")) {
        q = 0; // a parameter other than q: not a form this server understands
      } else {
        q = parse_qvalue(trim(params.substr(2))).value_or(0);
      }
    }
    if (lowercase(coding) == "gzip") gzip_q = q;
    if (coding == "*") any_q = q;
  }
  // A coding named explicitly outranks "*" (RFC 9110 12.5.3).
  return gzip_q ? *gzip_q > 0 : any_q.value_or(0) > 0;
}

} // namespace fabric::exporters
