// RapidJSON helpers: parsing with line/column errors, typed field access whose errors name
// the field, and a small writer for the `--json` outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/result.h"

namespace fabric::json {

// Every fabrickit JSON document carries this version; bump it when a field changes
// meaning or disappears (adding fields does not need a bump).
inline constexpr int kSchemaVersion = 1;

struct TextPosition {
  std::size_t line;   // 1-based
  std::size_t column; // 1-based, in bytes
};
TextPosition position_of(std::string_view text, std::size_t offset);

// How deep arrays and objects may nest in a parsed document. Every document fabrickit
// reads (CNI configurations and results, agent messages, state files) nests fewer than 10
// levels; the limit keeps whatever walks a parsed document recursively (copies,
// serialization) far from the end of any thread's stack.
inline constexpr std::size_t kMaxDepth = 64;

// Parses a whole document. The error says what was wrong and where:
// "config: line 3, column 14: Missing a comma or '}' after an object member."
// The parser is RapidJSON's iterative one, so that no input can exhaust the stack, and it
// stops at the first array or object deeper than `max_depth` ("line 1, column 65: arrays
// and objects nest deeper than 64 levels"). This is the one JSON parser for text that
// comes from outside the process.
Result<rapidjson::Document> parse(std::string_view text, std::string_view what,
                                  std::size_t max_depth = kMaxDepth);

// A member of `obj`, or nullptr when `obj` is not an object or has no such member.
const rapidjson::Value* find_member(const rapidjson::Value& obj, std::string_view name);
// The same, with a null value read as absent (the CNI spec's reading of optional fields).
const rapidjson::Value* find_non_null(const rapidjson::Value& obj, std::string_view name);

// Typed access to object members. `path` is the object's own location ("" for the root,
// "ipam" or "runtimeConfig.ips") so that errors name the full field: "ipam.type: ...".
std::string field_path(std::string_view path, std::string_view name);
Result<const rapidjson::Value*> get_object(const rapidjson::Value& obj, std::string_view path,
                                           std::string_view name);
Result<std::string> get_string(const rapidjson::Value& obj, std::string_view path,
                               std::string_view name);
Result<std::optional<std::string>>
get_optional_string(const rapidjson::Value& obj, std::string_view path, std::string_view name);
Result<std::optional<int64_t>> get_optional_int(const rapidjson::Value& obj, std::string_view path,
                                                std::string_view name);
Result<std::optional<bool>> get_optional_bool(const rapidjson::Value& obj, std::string_view path,
                                              std::string_view name);

// Compact or pretty serialization of a value.
std::string to_string(const rapidjson::Value& value, bool pretty = false);

// A streaming writer for reports. Keys are snake_case by convention; callers write them.
class Writer {
public:
  explicit Writer(bool pretty = true);

  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(std::string_view name);
  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(int64_t n);
  Writer& value(uint64_t n);
  Writer& value(int n) { return value(static_cast<int64_t>(n)); }
  Writer& value(unsigned n) { return value(static_cast<uint64_t>(n)); }
  Writer& value(double d);
  Writer& value(bool b);
  Writer& null();
  template <typename T> Writer& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  template <typename T> Writer& field(std::string_view name, const std::optional<T>& v) {
    key(name);
    return v ? value(*v) : null();
  }

  // The finished document, newline-terminated.
  std::string str() const;

private:
  rapidjson::StringBuffer buffer_;
  bool pretty_;
  // Both writers share the buffer; only the chosen one is used.
  rapidjson::Writer<rapidjson::StringBuffer> compact_;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> pretty_writer_;
};

} // namespace fabric::json
