#include "exporters/cidr.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>

namespace fabric::exporters {
namespace {

struct Parsed {
  Cidr cidr;
  bool had_prefix;
};

Result<Parsed> parse(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::string address(text.substr(0, slash));
  Parsed out{};
  if (inet_pton(AF_INET, address.c_str(), out.cidr.address.data()) == 1) {
    out.cidr.family = AF_INET;
  } else if (inet_pton(AF_INET6, address.c_str(), out.cidr.address.data()) == 1) {
    out.cidr.family = AF_INET6;
  } else {
    return Error(ErrorCode::kInvalidArgument, "address '" + std::string(text) + "'",
                 "not an IPv4 or IPv6 address");
  }
  const unsigned max = out.cidr.v4() ? 32 : 128;
  out.cidr.prefix = max;
  out.had_prefix = slash != std::string_view::npos;
  if (out.had_prefix) {
    std::string_view digits = text.substr(slash + 1);
    unsigned prefix = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
        prefix > max) {
      return Error(ErrorCode::kInvalidArgument, "prefix '" + std::string(text) + "'",
                   "the prefix length must be 0-" + std::to_string(max));
    }
    out.cidr.prefix = prefix;
  }
  return out;
}

} // namespace

bool Cidr::v4() const {
  return family == AF_INET;
}

bool Cidr::contains(const Cidr& other) const {
  if (family != other.family || prefix > other.prefix) return false;
  const unsigned whole = prefix / 8, rest = prefix % 8;
  if (!std::equal(address.begin(), address.begin() + whole, other.address.begin())) return false;
  if (rest == 0) return true;
  const auto high = static_cast<uint8_t>(0xff << (8 - rest));
  return (address[whole] & high) == (other.address[whole] & high);
}

std::string Cidr::text() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(family, address.data(), buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix);
}

Result<Cidr> parse_network(std::string_view text) {
  FABRIC_ASSIGN_OR_RETURN(Parsed parsed, parse(text));
  const Cidr& c = parsed.cidr;
  const unsigned bytes = c.v4() ? 4 : 16;
  for (unsigned bit = c.prefix; bit < bytes * 8; ++bit) {
    if (c.address[bit / 8] & (0x80 >> (bit % 8))) {
      return Error(ErrorCode::kInvalidArgument, "network '" + std::string(text) + "'",
                   "has bits set after the prefix (did you mean a /" + std::to_string(bytes * 8) +
                       " host?)");
    }
  }
  return c;
}

Result<Cidr> parse_host(std::string_view text) {
  FABRIC_ASSIGN_OR_RETURN(Parsed parsed, parse(text));
  parsed.cidr.prefix = parsed.cidr.v4() ? 32 : 128;
  return parsed.cidr;
}

} // namespace fabric::exporters
