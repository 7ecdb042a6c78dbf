#include "tests/unit/exporter/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "common/fd.h"

namespace fabric::exporters::testing {

Result<int> connect_idle(int port, const std::string& source) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::from_errno(errno, "socket");
  sockaddr_in local{};
  local.sin_family = AF_INET;
  if (::inet_pton(AF_INET, source.c_str(), &local.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::from_errno(err, "bind", source);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::from_errno(err, "connect", "127.0.0.1:" + std::to_string(port));
  }
  return fd;
}

Result<HttpResponse> http_get(int port, const std::string& path, const std::string& extra_headers,
                              int timeout_seconds, const std::string& method,
                              const std::string& source) {
  FABRIC_ASSIGN_OR_RETURN(int raw, connect_idle(port, source));
  UniqueFd fd(raw);
  timeval tv{timeout_seconds, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers +
                        (extra_headers.empty() ? "" : "\r\n") + "\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size()))
    return Error::from_errno(errno, "send");
  std::string raw_response;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno(errno, "recv", "response to GET " + path);
    if (n == 0) break;
    raw_response.append(buf, static_cast<std::size_t>(n));
  }
  const std::size_t end = raw_response.find("\r\n\r\n");
  if (end == std::string::npos) return Error(ErrorCode::kDecode, "HTTP response", "no header end");
  HttpResponse out;
  std::string head = raw_response.substr(0, end);
  out.body = raw_response.substr(end + 4);
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12) return Error(ErrorCode::kDecode, "HTTP status line", status_line);
  out.status = std::stoi(status_line.substr(9, 3));
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ')
      value.erase(0, 1);
    out.headers[name] = value;
  }
  return out;
}

Result<std::string> gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Error(ErrorCode::kSystem, "inflateInit2");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return Error(ErrorCode::kDecode, "gunzip", "not a complete gzip stream");
  return out;
}

} // namespace fabric::exporters::testing
