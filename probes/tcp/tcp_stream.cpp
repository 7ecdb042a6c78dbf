#include "probes/tcp/tcp_stream.h"

#include <cerrno>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "common/units.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;

// Reads are larger than writes so that a receiver drains whatever has arrived.
constexpr std::size_t kReadSize = 256 * 1024;

Error io_error(int err, const char* call) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return Error(ErrorCode::kTimeout, call, "no progress before the I/O timeout; peer stalled?");
  }
  return Error::from_errno(err, call);
}

void send_stream(int fd, const StreamPlan& plan, Transfer& sent, std::optional<Error>& error) {
  std::unique_ptr<char[]> buffer(new char[plan.write_size]);
  std::fill_n(buffer.get(), plan.write_size, static_cast<char>(0x5a));
  auto start = Clock::now();
  auto end = start + plan.duration;
  sent.first = start;
  for (;;) {
    std::size_t chunk = plan.write_size;
    if (plan.bytes != 0) {
      if (sent.bytes >= plan.bytes) break;
      chunk = static_cast<std::size_t>(std::min<uint64_t>(chunk, plan.bytes - sent.bytes));
    } else if (Clock::now() >= end) {
      break;
    }
    ssize_t n = ::send(fd, buffer.get(), chunk, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = io_error(errno, "send");
      break;
    }
    sent.bytes += static_cast<uint64_t>(n);
    if (plan.moved != nullptr) plan.moved->fetch_add(static_cast<uint64_t>(n));
  }
  sent.last = Clock::now();
  ::shutdown(fd, SHUT_WR);
}

void receive_stream(int fd, const StreamPlan& plan, Transfer& received,
                    std::optional<Error>& error) {
  std::unique_ptr<char[]> buffer(new char[kReadSize]);
  for (;;) {
    ssize_t n = ::recv(fd, buffer.get(), kReadSize, 0);
    if (n > 0) {
      auto now = Clock::now();
      if (!received.first) received.first = now;
      received.last = now;
      received.bytes += static_cast<uint64_t>(n);
      if (plan.moved != nullptr) plan.moved->fetch_add(static_cast<uint64_t>(n));
      continue;
    }
    if (n == 0) return;
    if (errno == EINTR) continue;
    error = io_error(errno, "recv");
    return;
  }
}

TransferTotals totals(const std::vector<StreamResult>& results, Transfer StreamResult::*which) {
  TransferTotals t;
  std::optional<Clock::time_point> first, last;
  for (const auto& r : results) {
    const Transfer& x = r.*which;
    t.bytes += x.bytes;
    if (x.first && (!first || *x.first < *first)) first = x.first;
    if (x.last && (!last || *x.last > *last)) last = x.last;
  }
  if (first && last) t.seconds = std::chrono::duration<double>(*last - *first).count();
  return t;
}

} // namespace

std::vector<StreamResult> run_streams(const std::vector<int>& fds, const StreamPlan& plan) {
  std::vector<StreamResult> results(fds.size());
  // Separate error slots per direction: a stream's sender and receiver run at once.
  std::vector<std::optional<Error>> send_errors(fds.size()), receive_errors(fds.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (plan.send) {
      threads.emplace_back([&, i] { send_stream(fds[i], plan, results[i].sent, send_errors[i]); });
    }
    if (plan.receive) {
      threads.emplace_back(
          [&, i] { receive_stream(fds[i], plan, results[i].received, receive_errors[i]); });
    }
  }
  for (auto& t : threads)
    t.join();
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (send_errors[i]) {
      results[i].error = std::move(send_errors[i]);
    } else if (receive_errors[i]) {
      results[i].error = std::move(receive_errors[i]);
    }
  }
  return results;
}

double TransferTotals::gbps() const {
  return seconds > 0 ? units::bytes_per_second_to_gbps(static_cast<double>(bytes) / seconds) : 0;
}

double TransferTotals::gbytes_per_s() const {
  return seconds > 0 ? units::bytes_per_second_to_gbytes(static_cast<double>(bytes) / seconds) : 0;
}

TransferTotals total_sent(const std::vector<StreamResult>& results) {
  return totals(results, &StreamResult::sent);
}

TransferTotals total_received(const std::vector<StreamResult>& results) {
  return totals(results, &StreamResult::received);
}

std::optional<Error> first_error(const std::vector<StreamResult>& results) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].error) {
      Error e = *results[i].error;
      return std::move(e.with_context("stream " + std::to_string(i)));
    }
  }
  return std::nullopt;
}

} // namespace fabric::probes
