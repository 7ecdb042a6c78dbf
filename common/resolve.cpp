#include "common/resolve.h"

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace fabric {
namespace {

// What the lookup thread and the caller share; whoever leaves last frees it.
struct Lookup {
  std::mutex mutex;
  std::condition_variable answered;
  bool done = false;
  bool abandoned = false; // the caller gave up: the thread frees the answer itself
  int rc = 0;
  int error_number = 0;
  addrinfo* found = nullptr;
};

Result<AddrinfoPtr> answer(const std::string& host, int rc, int error_number, addrinfo* found) {
  if (rc == 0) return AddrinfoPtr(found);
  if (rc == EAI_SYSTEM) return Error::from_errno(error_number, "getaddrinfo", host);
  return Error(ErrorCode::kNotFound, "resolving " + host, gai_strerror(rc));
}

} // namespace

Result<AddrinfoPtr> resolve_address(const std::string& host, const std::string& service,
                                    const addrinfo& hints, std::chrono::milliseconds timeout,
                                    const Resolver& resolver) {
  const char* node = host.empty() ? nullptr : host.c_str();
  const char* serv = service.empty() ? nullptr : service.c_str();
  // Numeric addresses and the wildcard never touch DNS: no thread for them.
  addrinfo numeric = hints;
  numeric.ai_flags |= AI_NUMERICHOST;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(node, serv, &numeric, &found);
  if (rc == 0 || node == nullptr) return answer(host, rc, errno, found);

  auto lookup = std::make_shared<Lookup>();
  try {
    std::thread([lookup, host, service, hints, resolver] {
      addrinfo* result = nullptr;
      int code =
          resolver(host.c_str(), service.empty() ? nullptr : service.c_str(), &hints, &result);
      int error_number = errno;
      std::lock_guard lock(lookup->mutex);
      if (lookup->abandoned) {
        if (code == 0) freeaddrinfo(result);
        return;
      }
      lookup->done = true;
      lookup->rc = code;
      lookup->error_number = error_number;
      lookup->found = result;
      lookup->answered.notify_one();
    }).detach();
  } catch (const std::system_error& e) {
    return Error(ErrorCode::kSystem, "resolving " + host, e.what());
  }
  std::unique_lock lock(lookup->mutex);
  if (!lookup->answered.wait_for(lock, timeout, [&] { return lookup->done; })) {
    lookup->abandoned = true;
    return Error(ErrorCode::kTimeout, "resolving " + host,
                 "no answer within " + std::to_string(timeout.count()) + " ms")
        .with_hint("check the node's DNS (/etc/resolv.conf), or give an IP address");
  }
  return answer(host, lookup->rc, lookup->error_number, lookup->found);
}

} // namespace fabric
