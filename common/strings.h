// Small string helpers for messages: lists of names as a person reads them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabric {

// {"a", "b", "c"} -> "a, b, c"; an empty list is an empty string. Every item gets its
// separator, empty ones included, so "a, , c" shows that the middle one was empty.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// Without leading and trailing ASCII whitespace (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view text);

} // namespace fabric
