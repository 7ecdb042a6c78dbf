// IP sets (the kernel's ip_set, over nfnetlink) with per-element counters: the per-pod
// accounting's one-lookup match. An iptables rule `-m set --match-set NAME src` finds a
// packet's pod in one hash lookup, however many pods the set holds, and the kernel counts
// the packet and its bytes on the element that matched (sets made `counters`), which a
// scrape reads back in one dump per set.
//
// Spoken over netlink through libmnl, as nfacct.h is: the image needs no `ipset` program
// and a scrape never forks. Needs CAP_NET_ADMIN in the network namespace; sets belong to
// that namespace. Two kinds of set are made here: `hash:ip` with counters (the pods), and
// `hash:net` with the skbinfo extension, whose elements carry a mark that an iptables rule
// `-j SET --map-set NAME dst --map-mark` puts on the packet (the traffic classes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "exporters/cidr.h"
#include "exporters/netfilter_socket.h"

namespace fabric::exporters {

inline constexpr std::size_t kIpsetNameMax = 31; // IPSET_MAXNAMELEN, without the NUL

struct IpsetElement {
  Cidr address; // a host (/32, /128) in a hash:ip set, a network in a hash:net one
  uint64_t packets = 0;
  uint64_t bytes = 0;
  // The mark value and mask the element sets on a packet (hash:net with skbinfo).
  uint32_t skbmark = 0;
  uint32_t skbmask = 0;
};

class IpsetSocket {
public:
  // kPermission without CAP_NET_ADMIN; kUnsupported when the kernel has no ip_set.
  static Result<IpsetSocket> open();

  // Makes a `hash:ip` set with counters for `family` (AF_INET, AF_INET6); one of that name,
  // type and family that exists already is kept as it is, elements and counts included.
  Result<void> create(const std::string& name, int family);
  // Makes a `hash:net` set with the skbinfo extension, kept likewise when it exists.
  Result<void> create_mark_map(const std::string& name, int family);
  // Names of every set starting with `prefix`.
  Result<std::vector<std::string>> names(std::string_view prefix);
  // The set's elements and their counters, in one dump; kNotFound when there is no set.
  Result<std::vector<IpsetElement>> list(const std::string& name);
  // Adds (elements already there keep their counts) or deletes (missing ones are fine)
  // hosts of the set's family, many to a message.
  Result<void> add(const std::string& name, const std::vector<Cidr>& hosts);
  Result<void> remove(const std::string& name, const std::vector<Cidr>& hosts);
  // Adds networks with the mark each sets (skbmark/skbmask) to a mark map; a network
  // already there takes the new mark.
  Result<void> add_marked(const std::string& name, const std::vector<IpsetElement>& networks);
  // Destroys a set; a missing one is fine. kTryAgain while a rule uses it.
  Result<void> destroy(const std::string& name);

private:
  explicit IpsetSocket(NetfilterSocket socket) : nl_(std::move(socket)) {}
  Result<void> create_set(const std::string& name, int family, const char* type, uint8_t revision,
                          uint32_t flags);
  Result<void> change(uint8_t command, const std::string& name,
                      const std::vector<IpsetElement>& elements, const char* what);
  // Sends a built request and waits for its acknowledgement.
  Result<void> acknowledged(char* buffer, uint32_t sequence, const std::string& what);

  NetfilterSocket nl_;
};

} // namespace fabric::exporters
