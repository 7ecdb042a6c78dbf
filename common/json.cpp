#include "common/json.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include "common/strings.h"

namespace fabric::json {
namespace {

// JSON text is UTF-8, and a reader may refuse a document that is not. Strings from outside
// (a profile's name, a peer's text, a file name) may hold any bytes: those that are not
// UTF-8 are written as the text \xNN.
template <typename Inner> class Utf8SafeHandler {
public:
  explicit Utf8SafeHandler(Inner& inner) : inner_(inner) {}
  bool Null() { return inner_.Null(); }
  bool Bool(bool b) { return inner_.Bool(b); }
  bool Int(int i) { return inner_.Int(i); }
  bool Uint(unsigned u) { return inner_.Uint(u); }
  bool Int64(int64_t i) { return inner_.Int64(i); }
  bool Uint64(uint64_t u) { return inner_.Uint64(u); }
  bool Double(double d) { return inner_.Double(d); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    return inner_.RawNumber(s, n, copy);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return as_utf8(s, n, copy, [this](auto... a) { return inner_.String(a...); });
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    return as_utf8(s, n, copy, [this](auto... a) { return inner_.Key(a...); });
  }
  bool StartObject() { return inner_.StartObject(); }
  bool EndObject(rapidjson::SizeType members) { return inner_.EndObject(members); }
  bool StartArray() { return inner_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) { return inner_.EndArray(elements); }

private:
  template <typename Write>
  static bool as_utf8(const char* s, rapidjson::SizeType n, bool copy, Write write) {
    std::string_view text(s, n);
    if (is_valid_utf8(text)) return write(s, n, copy);
    const std::string escaped = escape_invalid_utf8(text);
    return write(escaped.data(), static_cast<rapidjson::SizeType>(escaped.size()), true);
  }
  Inner& inner_;
};

template <typename Inner> bool write_utf8_safe(const rapidjson::Value& value, Inner& inner) {
  Utf8SafeHandler<Inner> handler(inner);
  return value.Accept(handler);
}

} // namespace

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

namespace {

// Hands every SAX event on to the document being built, and refuses to open an array or
// an object beyond the depth limit (the reader then stops with kParseErrorTermination).
class DepthLimitedBuilder {
public:
  DepthLimitedBuilder(rapidjson::Document& doc, std::size_t max_depth)
      : doc_(doc), max_depth_(max_depth) {}

  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    return doc_.RawNumber(s, n, copy);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) { return doc_.String(s, n, copy); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool StartObject() { return open() && doc_.StartObject(); }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    return doc_.EndObject(members);
  }
  bool StartArray() { return open() && doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    return doc_.EndArray(elements);
  }

  bool too_deep() const { return too_deep_; }

private:
  bool open() {
    if (depth_ == max_depth_) {
      too_deep_ = true;
      return false;
    }
    ++depth_;
    return true;
  }

  rapidjson::Document& doc_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
};

} // namespace

Result<rapidjson::Document> parse(std::string_view text, std::string_view what,
                                  std::size_t max_depth) {
  rapidjson::Document doc;
  rapidjson::MemoryStream bytes(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> input(bytes);
  rapidjson::ParseResult result;
  bool too_deep = false;
  auto generate = [&](rapidjson::Document& target) {
    DepthLimitedBuilder builder(target, max_depth);
    rapidjson::Reader reader;
    // JSON is UTF-8 (RFC 8259): a string that is not is refused here, not carried into
    // what is written back (where it would come out escaped, a different string).
    result = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(
        input, builder);
    too_deep = builder.too_deep();
    return !result.IsError();
  };
  doc.Populate(generate);
  if (result.IsError()) {
    TextPosition pos = position_of(text, result.Offset());
    std::string why =
        too_deep ? "arrays and objects nest deeper than " + std::to_string(max_depth) + " levels"
                 : rapidjson::GetParseError_En(result.Code());
    return Error(ErrorCode::kDecode, std::string(what),
                 "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) +
                     ": " + why);
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

} // namespace

const rapidjson::Value* find_member(const rapidjson::Value& obj, std::string_view name) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(rapidjson::StringRef(name.data(), name.size()));
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

const rapidjson::Value* find_non_null(const rapidjson::Value& obj, std::string_view name) {
  const rapidjson::Value* v = find_member(obj, name);
  return v == nullptr || v->IsNull() ? nullptr : v;
}

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
    write_utf8_safe(value, w);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    write_utf8_safe(value, w);
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
  if (!is_valid_utf8(name)) return key(escape_invalid_utf8(name)); // as Utf8SafeHandler
  FABRIC_JSON_WRITE(Key(name.data(), static_cast<rapidjson::SizeType>(name.size())));
  return *this;
}
Writer& Writer::value(std::string_view s) {
  if (!is_valid_utf8(s)) return value(escape_invalid_utf8(s));
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
