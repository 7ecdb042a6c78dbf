#include "common/json.h"

#include <rapidjson/error/en.h>

namespace fabric::json {

TextPosition position_of(std::string_view text, std::size_t offset) {
  TextPosition pos{1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

Result<rapidjson::Document> parse(std::string_view text, std::string_view what) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError()) {
    TextPosition pos = position_of(text, doc.GetErrorOffset());
    return Error(ErrorCode::kDecode, std::string(what),
                 "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) +
                     ": " + rapidjson::GetParseError_En(doc.GetParseError()));
  }
  return doc;
}

std::string field_path(std::string_view path, std::string_view name) {
  if (path.empty()) return std::string(name);
  return std::string(path) + "." + std::string(name);
}

namespace {

Error wrong_type(std::string_view path, std::string_view name, const char* expected) {
  return Error(ErrorCode::kInvalidConfig, field_path(path, name),
               std::string("must be ") + expected);
}

const rapidjson::Value* find_member(const rapidjson::Value& obj, std::string_view name) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(rapidjson::StringRef(name.data(), name.size()));
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

} // namespace

Result<const rapidjson::Value*> get_object(const rapidjson::Value& obj, std::string_view path,
                                           std::string_view name) {
  const rapidjson::Value* v = find_member(obj, name);
  if (v == nullptr) {
    return Error(ErrorCode::kInvalidConfig, field_path(path, name), "is required");
  }
  if (!v->IsObject()) return wrong_type(path, name, "an object");
  return v;
}

Result<std::string> get_string(const rapidjson::Value& obj, std::string_view path,
                               std::string_view name) {
  FABRIC_ASSIGN_OR_RETURN(auto v, get_optional_string(obj, path, name));
  if (!v) return Error(ErrorCode::kInvalidConfig, field_path(path, name), "is required");
  return *v;
}

Result<std::optional<std::string>>
get_optional_string(const rapidjson::Value& obj, std::string_view path, std::string_view name) {
  const rapidjson::Value* v = find_member(obj, name);
  if (v == nullptr || v->IsNull()) return std::optional<std::string>();
  if (!v->IsString()) return wrong_type(path, name, "a string");
  return std::optional<std::string>(std::string(v->GetString(), v->GetStringLength()));
}

Result<std::optional<int64_t>> get_optional_int(const rapidjson::Value& obj, std::string_view path,
                                                std::string_view name) {
  const rapidjson::Value* v = find_member(obj, name);
  if (v == nullptr || v->IsNull()) return std::optional<int64_t>();
  if (!v->IsInt64()) return wrong_type(path, name, "an integer");
  return std::optional<int64_t>(v->GetInt64());
}

Result<std::optional<bool>> get_optional_bool(const rapidjson::Value& obj, std::string_view path,
                                              std::string_view name) {
  const rapidjson::Value* v = find_member(obj, name);
  if (v == nullptr || v->IsNull()) return std::optional<bool>();
  if (!v->IsBool()) return wrong_type(path, name, "true or false");
  return std::optional<bool>(v->GetBool());
}

std::string to_string(const rapidjson::Value& value, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.SetIndent(' ', 2);
    value.Accept(w);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    value.Accept(w);
  }
  return std::string(buf.GetString(), buf.GetSize());
}

Writer::Writer(bool pretty) : pretty_(pretty), compact_(buffer_), pretty_writer_(buffer_) {
  pretty_writer_.SetIndent(' ', 2);
}

// Dispatches a call to whichever writer this Writer uses.
#define FABRIC_JSON_WRITE(call) (pretty_ ? pretty_writer_.call : compact_.call)

Writer& Writer::begin_object() {
  FABRIC_JSON_WRITE(StartObject());
  return *this;
}
Writer& Writer::end_object() {
  FABRIC_JSON_WRITE(EndObject());
  return *this;
}
Writer& Writer::begin_array() {
  FABRIC_JSON_WRITE(StartArray());
  return *this;
}
Writer& Writer::end_array() {
  FABRIC_JSON_WRITE(EndArray());
  return *this;
}
Writer& Writer::key(std::string_view name) {
  FABRIC_JSON_WRITE(Key(name.data(), static_cast<rapidjson::SizeType>(name.size())));
  return *this;
}
Writer& Writer::value(std::string_view s) {
  FABRIC_JSON_WRITE(String(s.data(), static_cast<rapidjson::SizeType>(s.size())));
  return *this;
}
Writer& Writer::value(int64_t n) {
  FABRIC_JSON_WRITE(Int64(n));
  return *this;
}
Writer& Writer::value(uint64_t n) {
  FABRIC_JSON_WRITE(Uint64(n));
  return *this;
}
Writer& Writer::value(double d) {
  FABRIC_JSON_WRITE(Double(d));
  return *this;
}
Writer& Writer::value(bool b) {
  FABRIC_JSON_WRITE(Bool(b));
  return *this;
}
Writer& Writer::null() {
  FABRIC_JSON_WRITE(Null());
  return *this;
}

#undef FABRIC_JSON_WRITE

std::string Writer::str() const {
  return std::string(buffer_.GetString(), buffer_.GetSize()) + "\n";
}

} // namespace fabric::json
