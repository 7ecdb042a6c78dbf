#include "exporters/stable_hash.h"

#include <cstdio>

namespace fabric::exporters {

uint64_t fnv1a64(std::string_view data) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string hex_hash(std::string_view data, unsigned digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(data)));
  return std::string(buf, digits > 16 ? 16 : digits); // the high digits mix best
}

} // namespace fabric::exporters
