// Reading YAML configuration (yaml-cpp) with errors that name the field and its line:
// "pfc.prio_pfc[1] (line 4): priority 9 is out of range 0-7". fabric-pfc profiles and the
// exporter's configuration are read with these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/result.h"

namespace fabric::yaml {

// Where a value is in the document: errors name the path and the 1-based line of the key (or
// list item) that holds it. The key's line, because a value left empty has no line of its own.
// `root` names the document itself ("profile", "config") for errors about it as a whole.
struct Where {
  std::string path;
  YAML::Mark mark;
  std::string_view root = "document";
};

// A value and where it is. Fields are copied, never assigned: assigning to a YAML::Node that
// is already bound overwrites the document's node instead of rebinding the handle.
struct Field : Where {
  YAML::Node node;
};

std::string line_of(const YAML::Mark& mark);
// kInvalidConfig: "path (line N): what".
Error invalid(const Where& where, std::string what);
// "'text'", "a list", "a map" or "nothing", for messages.
std::string describe(const YAML::Node& node);

// The documents of `text`; a syntax error is kDecode naming `source_name`, line and column.
Result<std::vector<YAML::Node>> parse_documents(const std::string& text,
                                                const std::string& source_name);

Field list_item(const Field& list, std::size_t i);

// One entry of a map: the key and the value share the entry's path and the key's line.
struct Entry {
  Field key;
  Field value;
};
Result<std::vector<Entry>> map_entries(const Field& f, const std::string& holds);

// A map of named keys. yaml-cpp keeps both copies of a repeated key and its lookups find
// the first, so a repeat would silently lose a setting: it is an error here, as are keys
// not in `allowed` and keys without a value.
using Section = std::map<std::string, Field, std::less<>>;
Result<Section> open_section(const Field& f, const std::vector<std::string_view>& allowed);
const Field* get(const Section& section, std::string_view key);

// What a number means, for range checks and their messages.
struct Range {
  std::string_view noun;
  uint64_t min;
  uint64_t max;
  bool hex = false;
  std::string_view unit = "";
};
// `value` as the range shows its numbers (decimal or 0x hex).
std::string show(uint64_t value, const Range& range);
// YAML 1.2 core-schema integers: decimal (a leading 0 stays decimal), 0x hex, 0o octal.
std::optional<uint64_t> parse_integer(std::string_view text);
Result<uint64_t> read_number(const Field& f, const Range& range);

// A reader of numbers in `range` as T, for read_into.
template <typename T> auto number_as(const Range& range) {
  return [range](const Field& f) -> Result<T> {
    FABRIC_ASSIGN_OR_RETURN(uint64_t value, read_number(f, range));
    return static_cast<T>(value);
  };
}

// Sets `out` with `read` from the section's `key`, when the document names it.
template <typename T, typename Read>
Result<void> read_into(const Section& section, std::string_view key, std::optional<T>& out,
                       Read read) {
  const Field* f = get(section, key);
  if (f == nullptr) return Ok();
  FABRIC_ASSIGN_OR_RETURN(out, read(*f));
  return Ok();
}

Result<std::string> read_text(const Field& f);
// Only YAML 1.2's true/false: YAML 1.1's yes/no/on/off are too easy to write by accident.
Result<bool> read_bool(const Field& f);
// Names that become sysfs directories. Netdevs follow the kernel's dev_valid_name():
// IFNAMSIZ-1 bytes, no '/', ':' or whitespace, not . or ..; RDMA devices IB_DEVICE_NAME_MAX-1.
Result<std::string> read_device_name(const Field& f, const std::string& what, std::size_t max);

} // namespace fabric::yaml
