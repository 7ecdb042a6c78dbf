#include "common/yaml_fields.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace fabric::yaml {

std::string line_of(const YAML::Mark& mark) {
  return std::to_string(mark.line + 1);
}

Error invalid(const Where& f, std::string what) {
  // The document itself, and keys at its top level that are not even text, have no path.
  std::string path = f.path.empty() ? std::string(f.root) : f.path;
  return Error(ErrorCode::kInvalidConfig, path + " (line " + line_of(f.mark) + ")",
               std::move(what));
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
  case YAML::NodeType::Sequence: return "a list";
  case YAML::NodeType::Map: return "a map";
  default: return "nothing";
  }
}

Result<std::vector<YAML::Node>> parse_documents(const std::string& text,
                                                const std::string& source_name) {
  try {
    return YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp bounds its recursive descent itself (DepthGuard) but calls it "bad file".
    return Error(ErrorCode::kDecode, source_name,
                 "line " + line_of(e.mark) + ", column " + std::to_string(e.mark.column + 1) +
                     ": sequences and maps nest " + std::to_string(e.depth()) +
                     " levels deep, the YAML parser's limit");
  } catch (const YAML::Exception& e) {
    std::string where = e.mark.is_null() ? ""
                                         : "line " + line_of(e.mark) + ", column " +
                                               std::to_string(e.mark.column + 1) + ": ";
    return Error(ErrorCode::kDecode, source_name, where + e.msg);
  }
}

Field list_item(const Field& list, std::size_t i) {
  YAML::Node node = list.node[i];
  return {{list.path + "[" + std::to_string(i) + "]", node.Mark(), list.root}, node};
}

Result<std::vector<Entry>> map_entries(const Field& f, const std::string& holds) {
  if (!f.node.IsMap()) return invalid(f, "must be a map of " + holds + ", not " + describe(f.node));
  std::vector<Entry> entries;
  for (const auto& kv : f.node) {
    if (!kv.first.IsScalar()) {
      return invalid({f.path, kv.first.Mark(), f.root},
                     "keys must be plain values, not " + describe(kv.first));
    }
    std::string path = f.path.empty() ? kv.first.Scalar() : f.path + "." + kv.first.Scalar();
    Where where{path, kv.first.Mark(), f.root};
    entries.push_back({{where, kv.first}, {where, kv.second}});
  }
  return entries;
}

Result<Section> open_section(const Field& f, const std::vector<std::string_view>& allowed) {
  FABRIC_ASSIGN_OR_RETURN(auto entries, map_entries(f, "settings"));
  Section section;
  for (Entry& e : entries) {
    const std::string& key = e.key.node.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string names;
      for (std::string_view name : allowed)
        names += (names.empty() ? "" : ", ") + std::string(name);
      return invalid(e.key, "unknown key '" + key + "'; allowed here: " + names);
    }
    if (auto it = section.find(key); it != section.end()) {
      return invalid(e.key, "'" + key + "' is given twice (first on line " +
                                line_of(it->second.mark) + ")");
    }
    if (e.value.node.IsNull()) return invalid(e.value, "has no value");
    section.emplace(key, std::move(e.value));
  }
  return section;
}

const Field* get(const Section& section, std::string_view key) {
  auto it = section.find(key);
  return it == section.end() ? nullptr : &it->second;
}

std::string show(uint64_t value, const Range& range) {
  char buf[32];
  std::snprintf(buf, sizeof buf, range.hex ? "0x%llx" : "%llu",
                static_cast<unsigned long long>(value));
  return buf;
}

std::optional<uint64_t> parse_integer(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) base = 16;
  if (text.size() > 2 && text[0] == '0' && text[1] == 'o') base = 8;
  if (base != 10) text.remove_prefix(2);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

Result<uint64_t> read_number(const Field& f, const Range& range) {
  std::string noun(range.noun);
  if (!f.node.IsScalar()) return invalid(f, noun + " must be a number, not " + describe(f.node));
  std::string_view text = f.node.Scalar();
  bool negative = text.starts_with('-');
  std::optional<uint64_t> value = parse_integer(negative ? text.substr(1) : text);
  if (!value) return invalid(f, noun + " must be a whole number, not " + describe(f.node));
  if ((negative && *value != 0) || *value < range.min || *value > range.max) {
    return invalid(f, noun + " " + std::string(text) + std::string(range.unit) +
                          " is out of range " + show(range.min, range) + "-" +
                          show(range.max, range) + std::string(range.unit));
  }
  return *value;
}

Result<std::string> read_text(const Field& f) {
  if (!f.node.IsScalar()) return invalid(f, "must be text, not " + describe(f.node));
  return f.node.Scalar();
}

Result<bool> read_bool(const Field& f) {
  const std::string text = f.node.IsScalar() ? f.node.Scalar() : "";
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return invalid(f, "must be true or false, not " + describe(f.node));
}

Result<std::string> read_device_name(const Field& f, const std::string& what, std::size_t max) {
  FABRIC_ASSIGN_OR_RETURN(std::string name, read_text(f));
  if (name.empty() || name.size() > max || name == "." || name == ".." ||
      name.find_first_of("/: \t\n\r\f\v") != std::string::npos) {
    return invalid(f, what + " '" + name + "' must be 1-" + std::to_string(max) +
                          " characters without '/', ':' or whitespace");
  }
  return name;
}

} // namespace fabric::yaml
