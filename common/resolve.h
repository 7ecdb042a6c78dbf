// Name resolution with a deadline. glibc's getaddrinfo follows resolv.conf (by default 5 s
// per try, two tries, every nameserver in turn) and cannot be interrupted, so a node whose
// DNS is down would hang a probe far past its --timeout.
#pragma once

#include <netdb.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"

namespace fabric {

struct AddrinfoFree {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using AddrinfoPtr = std::unique_ptr<addrinfo, AddrinfoFree>;

// getaddrinfo's signature; tests put a resolver that never answers in its place.
using Resolver = std::function<int(const char*, const char*, const addrinfo*, addrinfo**)>;

// getaddrinfo(host, service, hints) answered within `timeout`. An empty host is the
// wildcard (nullptr). A numeric address is converted at once; a name is looked up on a
// thread of its own, which is left to finish (and free what it finds) when the deadline
// passes first. Errors: kTimeout when no answer came in time, kNotFound when the name
// does not resolve, the errno of EAI_SYSTEM otherwise.
Result<AddrinfoPtr> resolve_address(const std::string& host, const std::string& service,
                                    const addrinfo& hints, std::chrono::milliseconds timeout,
                                    const Resolver& resolver = ::getaddrinfo);

} // namespace fabric
