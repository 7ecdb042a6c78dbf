// A hash that is the same on every node, build and version (std::hash is not): for the DCB
// configuration hash and the names of accounting objects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fabric::exporters {

// FNV-1a, 64 bits.
uint64_t fnv1a64(std::string_view data);
// The first (high) `digits` hex digits of fnv1a64(data), lowercase.
std::string hex_hash(std::string_view data, unsigned digits = 16);

} // namespace fabric::exporters
