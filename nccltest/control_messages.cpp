#include "nccltest/control_messages.h"

#include "nccltest/control_channel.h"

namespace fabric::nccltest::control {

std::string frame(json::Writer& w) {
  std::string s = w.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

Result<uint64_t> get_u64(const rapidjson::Value& doc, const char* name) {
  if (!doc.HasMember(name) || !doc[name].IsUint64()) {
    return Error(ErrorCode::kDecode, "control message",
                 std::string("field ") + name + " missing or not a whole number");
  }
  return doc[name].GetUint64();
}

Result<std::string> get_str(const rapidjson::Value& doc, const char* name) {
  if (!doc.HasMember(name) || !doc[name].IsString()) {
    return Error(ErrorCode::kDecode, "control message",
                 std::string("field ") + name + " missing or not a string");
  }
  return std::string(doc[name].GetString(), doc[name].GetStringLength());
}

Result<Beat> parse_beat(const rapidjson::Value& doc) {
  Beat b;
  FABRIC_ASSIGN_OR_RETURN(b.phase, get_u64(doc, "phase"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t finished, get_u64(doc, "finished"));
  FABRIC_ASSIGN_OR_RETURN(b.what, get_str(doc, "what"));
  FABRIC_ASSIGN_OR_RETURN(b.collective, get_str(doc, "collective"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t bytes, get_u64(doc, "bytes"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t in_place, get_u64(doc, "in_place"));
  if (b.what.size() > 256 || b.collective.size() > 64) {
    return Error(ErrorCode::kDecode, "control message", "beat text too long");
  }
  b.finished = finished != 0;
  b.bytes = bytes;
  b.in_place = in_place != 0;
  return b;
}

std::string result_message(uint64_t seq, const std::vector<std::string>& data) {
  json::Writer w(false);
  w.begin_object().field("type", "result").field("seq", seq).key("data").begin_array();
  for (const std::string& d : data)
    w.value(to_hex(d));
  w.end_array().end_object();
  return frame(w);
}

std::string abort_message(int exit_code, const std::string& reason) {
  json::Writer w(false);
  w.begin_object().field("type", "abort").field("code", exit_code).field("reason", reason);
  w.end_object();
  return frame(w);
}

} // namespace fabric::nccltest::control
