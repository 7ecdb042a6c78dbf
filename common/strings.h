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

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code
// points above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` with every byte that is not part of a well-formed UTF-8 sequence written as the
// four characters \xNN: what a JSON or log writer emits for bytes it cannot carry.
std::string escape_invalid_utf8(std::string_view text);

// The candidate a typo of `word` most likely meant: the closest by edit distance, when at
// most a third of the word's letters (at least one) differ; empty when none is that close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

} // namespace fabric
