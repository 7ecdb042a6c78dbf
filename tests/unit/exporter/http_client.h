// A minimal HTTP/1.1 GET for exporter tests: one request per connection, bounded waits.
#pragma once

#include <map>
#include <string>

#include "common/result.h"

namespace fabric::exporters::testing {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers; // names lowercased
  std::string body;
};

// GET `path` from 127.0.0.1:`port`, with extra request header lines ("Accept-Encoding:
// gzip"). Every socket wait is bounded by `timeout_seconds`. `source` is the client's own
// address: another loopback address (127.0.0.2) is another client to the server.
Result<HttpResponse> http_get(int port, const std::string& path,
                              const std::string& extra_headers = "", int timeout_seconds = 30,
                              const std::string& method = "GET",
                              const std::string& source = "127.0.0.1");

// A connected socket from `source` to 127.0.0.1:`port` that has sent nothing (the idle
// client).
Result<int> connect_idle(int port, const std::string& source = "127.0.0.1");

// gunzip, for checking a compressed body.
Result<std::string> gunzip(const std::string& data);

} // namespace fabric::exporters::testing
