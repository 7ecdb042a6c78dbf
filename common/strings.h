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

// The candidate a typo of `word` most likely meant: the closest by edit distance, when at
// most a third of the word's letters (at least one) differ; empty when none is that close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

} // namespace fabric
