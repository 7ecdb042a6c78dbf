// What fabric-cni writes on a link it created or moved, in the link's alias
// (IFLA_IFALIAS, `ip link` shows it), so that DEL and GC can recognise and undo their own
// work when no state record exists: an ADD killed by the runtime's deadline, a record
// lost with /var/lib, or a pod namespace destroyed with a NIC in it (the kernel returns
// physical NICs to the initial namespace, under whatever name is free, with the alias).
// The reference host-device plugin keeps the NIC's host name there for the same reason.
//
//   fabric-cni attachment=3f0c9a1e5b7d2c48 host=ens1f0 mtu=9000 rdma=mlx5_0
//
// `attachment` is attachment_digest(container ID, ifname): the full container ID can be
// 128 bytes and the alias only 255. host, mtu and rdma are for a moved NIC (exclusive
// mode): its name and MTU on the host before ADD, and the RDMA device that went with it.
// A macvlan (shared mode) carries the attachment alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabric::cni {

struct LinkMark {
  std::string attachment;
  std::string host_name = {};
  std::optional<int> host_mtu = std::nullopt;
  std::string rdma_device = {};
  bool operator==(const LinkMark&) const = default;
};

// 16 lower-case hex digits, stable across processes and versions (FNV-1a, 64 bits).
std::string attachment_digest(std::string_view container_id, std::string_view ifname);

std::string render_link_mark(const LinkMark& mark);
// nullopt for an alias that is not fabric-cni's (anyone's description of a link) or
// not well formed: a mark is acted on only when every field checks out.
std::optional<LinkMark> parse_link_mark(std::string_view alias);

// Whether `alias` marks the attachment (container_id, ifname).
bool marks_attachment(std::string_view alias, std::string_view container_id,
                      std::string_view ifname);

} // namespace fabric::cni
