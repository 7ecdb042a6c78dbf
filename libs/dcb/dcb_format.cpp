#include "libs/dcb/dcb_format.h"

#include <algorithm>
#include <cstdio>

namespace fabric::pfc::format {

std::string_view tsa_name(uint8_t tsa) {
  switch (static_cast<Tsa>(tsa)) {
  case Tsa::kStrict: return "strict";
  case Tsa::kCbShaper: return "cbs";
  case Tsa::kEts: return "ets";
  case Tsa::kVendor: return "vendor";
  }
  return "unknown";
}

std::optional<uint8_t> parse_tsa(std::string_view name) {
  for (Tsa t : {Tsa::kStrict, Tsa::kCbShaper, Tsa::kEts, Tsa::kVendor}) {
    if (tsa_name(static_cast<uint8_t>(t)) == name) return static_cast<uint8_t>(t);
  }
  return std::nullopt;
}

std::string_view selector_key(uint8_t selector) {
  switch (static_cast<AppSelector>(selector)) {
  case AppSelector::kEthertype: return "ethtype_prio";
  case AppSelector::kStream: return "stream_port_prio";
  case AppSelector::kDgram: return "dgram_port_prio";
  case AppSelector::kAny: return "port_prio";
  case AppSelector::kDscp: return "dscp_prio";
  }
  return "unknown_selector_prio";
}

std::string dcbx_mode(uint8_t flags) {
  // DCB_CAP_DCBX_HOST 0x1, LLD_MANAGED 0x2, VER_CEE 0x4, VER_IEEE 0x8, STATIC 0x10.
  std::string text;
  auto add = [&](uint8_t bit, const char* word) {
    if (flags & bit) text += (text.empty() ? "" : " ") + std::string(word);
  };
  add(0x01, "host");
  add(0x02, "lld-managed");
  add(0x04, "cee");
  add(0x08, "ieee");
  add(0x10, "static");
  if (text.empty()) text = "none";
  return text;
}

std::string prio_bits(uint8_t mask) {
  std::string out;
  for (int p = 0; p < kPriorities; ++p) {
    out += (p ? " " : "") + std::to_string(p) + ((mask >> p & 1) ? ":on" : ":off");
  }
  return out;
}

std::string tsa_list(const PerTc<uint8_t>& tsa) {
  std::string out;
  for (int tc = 0; tc < kTrafficClasses; ++tc) {
    out += (tc ? " " : "") + std::to_string(tc) + ":" + std::string(tsa_name(tsa[tc]));
  }
  return out;
}

std::string app_entries(const std::vector<AppEntry>& apps, uint8_t selector) {
  std::string out;
  for (const auto& app : apps) {
    if (app.selector != selector) continue;
    char key[16];
    if (selector == static_cast<uint8_t>(AppSelector::kEthertype)) {
      std::snprintf(key, sizeof key, "0x%04x", app.protocol);
    } else {
      std::snprintf(key, sizeof key, "%u", app.protocol);
    }
    out += (out.empty() ? "" : " ") + std::string(key) + ":" + std::to_string(app.priority);
  }
  return out;
}

std::vector<uint8_t> selectors_in(const std::vector<AppEntry>& apps) {
  std::vector<uint8_t> out;
  for (const auto& app : apps) {
    if (std::find(out.begin(), out.end(), app.selector) == out.end()) out.push_back(app.selector);
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace fabric::pfc::format
