#include "exporters/ipset.h"

#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/ipset/ip_set.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace fabric::exporters {
namespace {

// The oldest protocol every kernel since 3.x speaks; newer ones accept it too.
constexpr uint8_t kIpsetProtocol = IPSET_PROTOCOL_MIN;
// hash:ip revision 4 (counters, comments, forceadd, skbinfo): every kernel since 3.18.
constexpr uint8_t kHashIpRevision = 4;
// hash:net revision 6 (skbinfo; an earlier revision takes the flag and ignores it): every
// kernel since 3.19.
constexpr uint8_t kHashNetRevision = 6;
// Elements per ADD/DEL message, and the message's buffer: an element is at most 48 bytes (a
// v6 network with its prefix and mark), 6 KiB a batch, more than the page that
// MNL_SOCKET_BUFFER_SIZE is (mnl_attr_put does not check the room left).
constexpr std::size_t kIpsetElementsPerMessage = 128;
constexpr std::size_t kIpsetMaxElementBytes = 64;
constexpr std::size_t kIpsetSendBuffer = 512 + kIpsetElementsPerMessage * kIpsetMaxElementBytes;
constexpr std::size_t kIpsetReceiveBuffer = 64 * 1024;

Error ipset_error(int err, const std::string& operation, const std::string& detail) {
  switch (err) {
  case EPERM:
    return Error::from_errno(err, operation, detail).with_hint("ip sets need CAP_NET_ADMIN");
  case IPSET_ERR_FIND_TYPE:
    return Error(ErrorCode::kUnsupported, operation,
                 detail + ": the kernel lacks this set type (ip_set_hash_ip, ip_set_hash_net)");
  case IPSET_ERR_BUSY:
  case IPSET_ERR_REFERENCED:
    return Error(ErrorCode::kTryAgain, operation, detail + ": still used by a rule");
  case IPSET_ERR_EXIST_SETNAME2:
    return Error(ErrorCode::kAlreadyExists, operation,
                 detail + ": a set of that name exists with another type or family");
  case IPSET_ERR_PROTOCOL:
    return Error(ErrorCode::kUnsupported, operation,
                 detail + ": the kernel refused the ip_set request (protocol)");
  default:
    if (err >= IPSET_ERR_PRIVATE)
      return Error(ErrorCode::kSystem, operation, detail + ": ip_set error " + std::to_string(err));
    if (err == EPROTONOSUPPORT || err == EOPNOTSUPP)
      return Error(ErrorCode::kUnsupported, operation, detail + ": the kernel has no ip_set");
    return Error::from_errno(err, operation, detail);
  }
}

nlmsghdr* start_ipset_request(char* buffer, uint8_t command, uint16_t flags, uint32_t sequence) {
  nlmsghdr* message = mnl_nlmsg_put_header(buffer);
  message->nlmsg_type = static_cast<uint16_t>((NFNL_SUBSYS_IPSET << 8) | command);
  message->nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  message->nlmsg_seq = sequence;
  auto* header = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(message, sizeof(nfgenmsg)));
  header->nfgen_family = AF_INET;
  header->version = NFNETLINK_V0;
  header->res_id = 0;
  mnl_attr_put_u8(message, IPSET_ATTR_PROTOCOL, kIpsetProtocol);
  return message;
}

// ip_set takes its integers in network order and says so in the attribute type.
void ipset_put_u32(nlmsghdr* message, uint16_t type, uint32_t value) {
  mnl_attr_put_u32(message, static_cast<uint16_t>(type | NLA_F_NET_BYTEORDER), htobe32(value));
}

// The element's address, its prefix length where it is a network, and its mark.
void ipset_put_element(nlmsghdr* message, const IpsetElement& element) {
  const Cidr& address = element.address;
  nlattr* ip = mnl_attr_nest_start(message, IPSET_ATTR_IP);
  if (address.v4()) {
    mnl_attr_put(message, IPSET_ATTR_IPADDR_IPV4 | NLA_F_NET_BYTEORDER, 4, address.address.data());
  } else {
    mnl_attr_put(message, IPSET_ATTR_IPADDR_IPV6 | NLA_F_NET_BYTEORDER, 16, address.address.data());
  }
  mnl_attr_nest_end(message, ip);
  if (address.prefix != (address.v4() ? 32u : 128u))
    mnl_attr_put_u8(message, IPSET_ATTR_CIDR, static_cast<uint8_t>(address.prefix));
  if (element.skbmask != 0) {
    const uint64_t mark = (uint64_t{element.skbmark} << 32) | element.skbmask;
    mnl_attr_put_u64(message, IPSET_ATTR_SKBMARK | NLA_F_NET_BYTEORDER, htobe64(mark));
  }
}

// The attributes of one nest (or of the message after its nfgenmsg), by type.
template <std::size_t N> struct IpsetAttributes {
  const nlattr* at[N + 1] = {};
};

template <std::size_t N> int keep_ipset_attribute(const nlattr* attribute, void* data) {
  auto* table = static_cast<IpsetAttributes<N>*>(data);
  const uint16_t type = mnl_attr_get_type(attribute);
  if (type <= N) table->at[type] = attribute;
  return MNL_CB_OK;
}

template <std::size_t N> IpsetAttributes<N> ipset_nested(const nlattr* nest) {
  IpsetAttributes<N> out;
  mnl_attr_parse_nested(nest, keep_ipset_attribute<N>, &out);
  return out;
}

uint64_t ipset_u64(const nlattr* attribute) {
  return attribute != nullptr && mnl_attr_get_payload_len(attribute) == 8
             ? be64toh(mnl_attr_get_u64(attribute))
             : 0;
}

// One element of a dump's IPSET_ATTR_ADT; false when it carries no address.
bool parse_ipset_element(const nlattr* data, IpsetElement& out) {
  auto fields = ipset_nested<IPSET_ATTR_ADT_MAX>(data);
  if (fields.at[IPSET_ATTR_IP] == nullptr) return false;
  auto ip = ipset_nested<IPSET_ATTR_IPADDR_MAX>(fields.at[IPSET_ATTR_IP]);
  if (const nlattr* v4 = ip.at[IPSET_ATTR_IPADDR_IPV4];
      v4 != nullptr && mnl_attr_get_payload_len(v4) == 4) {
    out.address.family = AF_INET;
    out.address.prefix = 32;
    std::memcpy(out.address.address.data(), mnl_attr_get_payload(v4), 4);
  } else if (const nlattr* v6 = ip.at[IPSET_ATTR_IPADDR_IPV6];
             v6 != nullptr && mnl_attr_get_payload_len(v6) == 16) {
    out.address.family = AF_INET6;
    out.address.prefix = 128;
    std::memcpy(out.address.address.data(), mnl_attr_get_payload(v6), 16);
  } else {
    return false;
  }
  if (const nlattr* cidr = fields.at[IPSET_ATTR_CIDR]; cidr != nullptr &&
                                                       mnl_attr_get_payload_len(cidr) == 1 &&
                                                       mnl_attr_get_u8(cidr) <= out.address.prefix)
    out.address.prefix = mnl_attr_get_u8(cidr);
  const uint64_t mark = ipset_u64(fields.at[IPSET_ATTR_SKBMARK]);
  out.skbmark = static_cast<uint32_t>(mark >> 32);
  out.skbmask = static_cast<uint32_t>(mark);
  out.packets = ipset_u64(fields.at[IPSET_ATTR_PACKETS]);
  out.bytes = ipset_u64(fields.at[IPSET_ATTR_BYTES]);
  return true;
}

struct IpsetDumpContext {
  std::string_view prefix;             // names(): which set names to keep
  std::vector<std::string>* names;     // names() fills this
  std::vector<IpsetElement>* elements; // list() fills this
};

int on_ipset_dump_message(const nlmsghdr* message, void* data) {
  auto* context = static_cast<IpsetDumpContext*>(data);
  IpsetAttributes<IPSET_ATTR_CMD_MAX> top;
  mnl_attr_parse(message, sizeof(nfgenmsg), keep_ipset_attribute<IPSET_ATTR_CMD_MAX>, &top);
  if (context->names != nullptr) {
    if (const nlattr* name = top.at[IPSET_ATTR_SETNAME]) {
      std::string_view text(mnl_attr_get_str(name),
                            strnlen(mnl_attr_get_str(name), mnl_attr_get_payload_len(name)));
      if (text.starts_with(context->prefix)) context->names->emplace_back(text);
    }
    return MNL_CB_OK;
  }
  const nlattr* adt = top.at[IPSET_ATTR_ADT];
  if (adt == nullptr) return MNL_CB_OK; // the header message
  // mnl_attr_for_each_nested, without its conversions from void* that C++ refuses.
  const char* end =
      static_cast<const char*>(mnl_attr_get_payload(adt)) + mnl_attr_get_payload_len(adt);
  for (auto* element = static_cast<const nlattr*>(mnl_attr_get_payload(adt));
       mnl_attr_ok(element, static_cast<int>(end - reinterpret_cast<const char*>(element)));
       element = mnl_attr_next(element)) {
    IpsetElement parsed;
    if (parse_ipset_element(element, parsed)) context->elements->push_back(parsed);
  }
  return MNL_CB_OK;
}

} // namespace

Result<IpsetSocket> IpsetSocket::open() {
  FABRIC_ASSIGN_OR_RETURN(NetfilterSocket socket,
                          NetfilterSocket::open([](int err, const std::string& operation) {
                            return ipset_error(err, operation, "ip_set");
                          }));
  return IpsetSocket(std::move(socket));
}

Result<void> IpsetSocket::acknowledged(char* buffer, uint32_t sequence, const std::string& what) {
  auto* message = reinterpret_cast<nlmsghdr*>(buffer);
  if (mnl_socket_sendto(nl_.get(), message, message->nlmsg_len) < 0)
    return ipset_error(errno, what, "send");
  std::vector<char> reply(MNL_SOCKET_BUFFER_SIZE);
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(nl_.get(), reply.data(), reply.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ipset_error(errno, what, "receive");
    }
    const int rc = mnl_cb_run(reply.data(), static_cast<std::size_t>(n), sequence, nl_.port_id(),
                              nullptr, nullptr);
    if (rc >= 0) return Ok();
    return ipset_error(errno, what, "");
  }
}

Result<void> IpsetSocket::create(const std::string& name, int family) {
  return create_set(name, family, "hash:ip", kHashIpRevision, IPSET_FLAG_WITH_COUNTERS);
}

Result<void> IpsetSocket::create_mark_map(const std::string& name, int family) {
  return create_set(name, family, "hash:net", kHashNetRevision, IPSET_FLAG_WITH_SKBINFO);
}

Result<void> IpsetSocket::create_set(const std::string& name, int family, const char* type,
                                     uint8_t revision, uint32_t flags) {
  if (name.empty() || name.size() > kIpsetNameMax) {
    return Error(ErrorCode::kInvalidArgument, "ipset create",
                 "set name '" + name + "' must be 1-31 characters");
  }
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t sequence = nl_.next_sequence();
  // No NLM_F_EXCL: a set that exists with the same parameters is success.
  nlmsghdr* message = start_ipset_request(buffer.data(), IPSET_CMD_CREATE, NLM_F_ACK, sequence);
  mnl_attr_put_strz(message, IPSET_ATTR_SETNAME, name.c_str());
  mnl_attr_put_strz(message, IPSET_ATTR_TYPENAME, type);
  mnl_attr_put_u8(message, IPSET_ATTR_REVISION, revision);
  mnl_attr_put_u8(message, IPSET_ATTR_FAMILY, family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6);
  nlattr* data = mnl_attr_nest_start(message, IPSET_ATTR_DATA);
  ipset_put_u32(message, IPSET_ATTR_CADT_FLAGS, flags);
  mnl_attr_nest_end(message, data);
  return acknowledged(buffer.data(), sequence, "ipset create " + name);
}

Result<void> IpsetSocket::change(uint8_t command, const std::string& name,
                                 const std::vector<IpsetElement>& elements, const char* what) {
  for (std::size_t first = 0; first < elements.size(); first += kIpsetElementsPerMessage) {
    std::vector<char> buffer(kIpsetSendBuffer);
    const uint32_t sequence = nl_.next_sequence();
    // No NLM_F_EXCL: an element already there (ADD) or already gone (DEL) is success, and
    // an ADD of an existing element leaves its counters alone.
    nlmsghdr* message = start_ipset_request(buffer.data(), command, NLM_F_ACK, sequence);
    mnl_attr_put_strz(message, IPSET_ATTR_SETNAME, name.c_str());
    // The kernel takes a batch (IPSET_ATTR_ADT) only with a line number to report errors
    // against, as `ipset restore` sends.
    mnl_attr_put_u32(message, IPSET_ATTR_LINENO, 0);
    nlattr* adt = mnl_attr_nest_start(message, IPSET_ATTR_ADT);
    const std::size_t last = std::min(elements.size(), first + kIpsetElementsPerMessage);
    for (std::size_t i = first; i < last; ++i) {
      nlattr* data = mnl_attr_nest_start(message, IPSET_ATTR_DATA);
      ipset_put_element(message, elements[i]);
      mnl_attr_nest_end(message, data);
    }
    mnl_attr_nest_end(message, adt);
    FABRIC_TRY(acknowledged(buffer.data(), sequence, std::string(what) + " " + name));
  }
  return Ok();
}

namespace {

std::vector<IpsetElement> ipset_elements_of(const std::vector<Cidr>& addresses) {
  std::vector<IpsetElement> out;
  out.reserve(addresses.size());
  for (const auto& address : addresses)
    out.push_back({.address = address});
  return out;
}

} // namespace

Result<void> IpsetSocket::add(const std::string& name, const std::vector<Cidr>& hosts) {
  return change(IPSET_CMD_ADD, name, ipset_elements_of(hosts), "ipset add");
}

Result<void> IpsetSocket::remove(const std::string& name, const std::vector<Cidr>& hosts) {
  return change(IPSET_CMD_DEL, name, ipset_elements_of(hosts), "ipset del");
}

Result<void> IpsetSocket::add_marked(const std::string& name,
                                     const std::vector<IpsetElement>& networks) {
  return change(IPSET_CMD_ADD, name, networks, "ipset add");
}

Result<void> IpsetSocket::destroy(const std::string& name) {
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t sequence = nl_.next_sequence();
  nlmsghdr* message = start_ipset_request(buffer.data(), IPSET_CMD_DESTROY, NLM_F_ACK, sequence);
  mnl_attr_put_strz(message, IPSET_ATTR_SETNAME, name.c_str());
  auto destroyed = acknowledged(buffer.data(), sequence, "ipset destroy " + name);
  if (!destroyed.ok() && destroyed.error().code() == ErrorCode::kNotFound) return Ok();
  return destroyed;
}

namespace {

// A LIST dump: every message through on_ipset_dump_message until NLMSG_DONE.
Result<void> run_ipset_dump(mnl_socket* socket, uint32_t port_id, char* request, uint32_t sequence,
                            IpsetDumpContext& context, const std::string& what) {
  auto* message = reinterpret_cast<nlmsghdr*>(request);
  if (mnl_socket_sendto(socket, message, message->nlmsg_len) < 0)
    return ipset_error(errno, what, "send");
  std::vector<char> buffer(kIpsetReceiveBuffer);
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(socket, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ipset_error(errno, what, "receive");
    }
    const int rc = mnl_cb_run(buffer.data(), static_cast<std::size_t>(n), sequence, port_id,
                              on_ipset_dump_message, &context);
    if (rc == MNL_CB_STOP) return Ok();
    if (rc < 0) return ipset_error(errno, what, "");
  }
}

} // namespace

Result<std::vector<std::string>> IpsetSocket::names(std::string_view prefix) {
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t sequence = nl_.next_sequence();
  nlmsghdr* message = start_ipset_request(buffer.data(), IPSET_CMD_LIST, NLM_F_DUMP, sequence);
  ipset_put_u32(message, IPSET_ATTR_FLAGS, IPSET_FLAG_LIST_SETNAME);
  std::vector<std::string> out;
  IpsetDumpContext context{prefix, &out, nullptr};
  FABRIC_TRY(
      run_ipset_dump(nl_.get(), nl_.port_id(), buffer.data(), sequence, context, "ipset list"));
  return out;
}

Result<std::vector<IpsetElement>> IpsetSocket::list(const std::string& name) {
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t sequence = nl_.next_sequence();
  nlmsghdr* message = start_ipset_request(buffer.data(), IPSET_CMD_LIST, NLM_F_DUMP, sequence);
  mnl_attr_put_strz(message, IPSET_ATTR_SETNAME, name.c_str());
  std::vector<IpsetElement> out;
  IpsetDumpContext context{{}, nullptr, &out};
  FABRIC_TRY(run_ipset_dump(nl_.get(), nl_.port_id(), buffer.data(), sequence, context,
                            "ipset list " + name));
  return out;
}

} // namespace fabric::exporters
