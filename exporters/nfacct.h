// Extended accounting objects (nfnetlink_acct): named packet and byte counters that
// iptables rules feed through the nfacct match (`-m nfacct --nfacct-name NAME`), read in
// one netlink dump, without iptables and without the xtables lock. libnetfilter_acct
// builds and parses the messages; libmnl carries them. Needs CAP_NET_ADMIN in the network
// namespace (every nfnetlink request does); objects belong to that namespace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "exporters/netfilter_socket.h"

namespace fabric::exporters {

inline constexpr std::size_t kNfacctNameMax = 31; // NFACCT_NAME_MAX, without the NUL

struct NfacctCounter {
  std::string name;
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

class NfacctSocket {
public:
  // kPermission without CAP_NET_ADMIN; kUnsupported when the kernel has no nfnetlink_acct.
  static Result<NfacctSocket> open();

  // Every object whose name starts with `prefix`, in one dump.
  Result<std::vector<NfacctCounter>> dump(std::string_view prefix = "");
  // Creates an object; one that exists already is kept as it is (its counts go on).
  Result<void> create(const std::string& name);
  // Removes an object; a missing one is fine. kTryAgain (EBUSY) while a rule uses it.
  Result<void> remove(const std::string& name);

private:
  explicit NfacctSocket(NetfilterSocket socket) : nl_(std::move(socket)) {}
  Result<void> request(uint8_t command, uint16_t flags, const std::string& name, const char* what);

  NetfilterSocket nl_;
};

} // namespace fabric::exporters
