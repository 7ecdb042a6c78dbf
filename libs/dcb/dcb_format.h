// Text forms of DCB values, in iproute2 dcb's words ("0:off 1:off 2:off 3:on ...",
// "0:ets 6:strict", "26:3 48:6"), shared by show, plan and apply reports.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/dcb/dcb_config.h"

namespace fabric::pfc::format {

std::string_view tsa_name(uint8_t tsa); // strict, cbs, ets, vendor
std::optional<uint8_t> parse_tsa(std::string_view name);
std::string_view selector_key(uint8_t selector); // dscp_prio, ethtype_prio, ...
std::string dcbx_mode(uint8_t flags);            // "host ieee", "lld-managed cee", ...

// "0:off 1:off 2:off 3:on ..." for a bitmask over the 8 priorities.
std::string prio_bits(uint8_t mask);
// "0:0 1:0 2:0 3:3 ..." for any per-priority or per-TC array.
template <typename T, std::size_t N> std::string indexed(const std::array<T, N>& values) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    out += (i ? " " : "") + std::to_string(i) + ":" + std::to_string(values[i]);
  }
  return out;
}
std::string tsa_list(const PerTc<uint8_t>& tsa);
// "26:3 48:6" for the APP entries of one selector (ethertypes in hex).
std::string app_entries(const std::vector<AppEntry>& apps, uint8_t selector);
// The selectors that occur in `apps`, in selector order.
std::vector<uint8_t> selectors_in(const std::vector<AppEntry>& apps);

} // namespace fabric::pfc::format
