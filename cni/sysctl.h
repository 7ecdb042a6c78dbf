// Network sysctls (/proc/sys/net/...). /proc/sys/net shows the network namespace of the
// thread that opens a file there, so these act in the calling thread's namespace, like
// the link operations.
#pragma once

#include <string>

#include "common/result.h"

namespace fabric::cni {

// `key` in slash form, relative to /proc/sys: "net/ipv4/conf/net1/arp_notify". Keys that
// would leave /proc/sys ("..", absolute paths) are refused; a missing key is kNotFound.
Result<void> write_sysctl(const std::string& key, const std::string& value);
// The value without its trailing newline.
Result<std::string> read_sysctl(const std::string& key);

} // namespace fabric::cni
