#include "nccltest/comm_split.h"

#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>

namespace fabric::nccltest {
namespace {

Error split_usage(const char* variable, const std::string& detail) {
  return Error(ErrorCode::kInvalidArgument, variable, detail);
}

// nccl-tests' parseInt: leading spaces, then 0b binary, else strtoul's base 0.
std::optional<long> split_value(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  int base = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    text.remove_prefix(2);
    base = 2;
  }
  const std::string digits(text);
  if (digits.empty() || digits.size() > 32) return std::nullopt;
  char* end = nullptr;
  const unsigned long v = std::strtoul(digits.c_str(), &end, base);
  if (end == digits.c_str() || *end != '\0' || v > 0x7fffffffUL) return std::nullopt;
  return static_cast<long>(v);
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

} // namespace

Result<std::optional<int>> split_color(const char* mask, const char* split, int rank) {
  if (mask != nullptr) {
    const std::string text = mask;
    char* end = nullptr;
    const unsigned long m = std::strtoul(text.c_str(), &end, 16);
    if (text.empty() || *end != '\0') {
      return split_usage(kSplitMaskEnv, "'" + text + "' is not a hexadecimal mask");
    }
    return std::optional<int>(rank & static_cast<int>(m & 0x7fffffffUL));
  }
  if (split == nullptr) return std::optional<int>();
  const std::string_view text = split;
  struct Op {
    std::string_view word, symbol;
    char kind;
  };
  for (const Op& op :
       {Op{"AND", "&", '&'}, Op{"OR", "|", '|'}, Op{"MOD", "%", '%'}, Op{"DIV", "/", '/'}}) {
    std::size_t skip = 0;
    if (starts_with_nocase(text, op.word)) {
      skip = op.word.size();
    } else if (text.substr(0, 1) == op.symbol) {
      skip = 1;
    } else {
      continue;
    }
    const std::optional<long> value = split_value(text.substr(skip));
    if (!value) {
      return split_usage(kSplitEnv,
                         "'" + std::string(text) + "': no number after " + std::string(op.word));
    }
    const long v = *value;
    if ((op.kind == '%' || op.kind == '/') && v == 0) {
      return split_usage(kSplitEnv, "'" + std::string(text) + "' divides by 0");
    }
    switch (op.kind) {
    case '&': return std::optional<int>(static_cast<int>(rank & v));
    case '|': return std::optional<int>(static_cast<int>(rank | v));
    case '%': return std::optional<int>(static_cast<int>(rank % v));
    default: return std::optional<int>(static_cast<int>(rank / v));
    }
  }
  return split_usage(kSplitEnv,
                     "'" + std::string(text) +
                         "' is not <op><value> with op AND, OR, MOD or DIV (or & | % /)");
}

} // namespace fabric::nccltest
