#include "cni/link_mark.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>

#include "cni/config.h"
#include "cni/names.h"

namespace fabric::cni {
namespace {

constexpr std::string_view kPrefix = "fabric-cni ";

bool is_digest(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

// RDMA device names as config.cpp admits them: printable, no '/', at most 63 bytes.
bool is_rdma_name(std::string_view s) {
  return !s.empty() && s.size() <= 63 && s != "." && s != ".." &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return c != '/' && std::isgraph(static_cast<unsigned char>(c)) != 0;
         });
}

} // namespace

std::string attachment_digest(std::string_view container_id, std::string_view ifname) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&](std::string_view part) {
    for (char c : part) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
  };
  mix(container_id);
  mix("/"); // ':' and '/' appear in neither part, so the pair is unambiguous
  mix(ifname);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string render_link_mark(const LinkMark& mark) {
  std::string text = std::string(kPrefix) + "attachment=" + mark.attachment;
  if (!mark.host_name.empty()) text += " host=" + mark.host_name;
  if (mark.host_mtu) text += " mtu=" + std::to_string(*mark.host_mtu);
  if (!mark.rdma_device.empty()) text += " rdma=" + mark.rdma_device;
  return text;
}

std::optional<LinkMark> parse_link_mark(std::string_view alias) {
  if (!alias.starts_with(kPrefix)) return std::nullopt;
  alias.remove_prefix(kPrefix.size());
  LinkMark mark;
  while (!alias.empty()) {
    std::size_t end = alias.find(' ');
    std::string_view field = alias.substr(0, end);
    alias = end == std::string_view::npos ? std::string_view() : alias.substr(end + 1);
    std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "attachment" && is_digest(value)) {
      mark.attachment = value;
    } else if (key == "host" && validate_interface_name(value, "host").ok()) {
      mark.host_name = value;
    } else if (key == "mtu") {
      int mtu = 0;
      auto [stop, ec] = std::from_chars(value.data(), value.data() + value.size(), mtu);
      if (ec != std::errc() || stop != value.data() + value.size() || mtu < kMinMtu ||
          mtu > kMaxMtu) {
        return std::nullopt;
      }
      mark.host_mtu = mtu;
    } else if (key == "rdma" && is_rdma_name(value)) {
      mark.rdma_device = value;
    } else {
      return std::nullopt;
    }
  }
  if (mark.attachment.empty()) return std::nullopt;
  return mark;
}

bool marks_attachment(std::string_view alias, std::string_view container_id,
                      std::string_view ifname) {
  auto mark = parse_link_mark(alias);
  return mark && mark->attachment == attachment_digest(container_id, ifname);
}

} // namespace fabric::cni
