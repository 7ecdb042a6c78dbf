#include "probes/rdma/rdma_exchange.h"

#include <algorithm>
#include <cmath>

#include "common/json.h"

namespace fabric::probes {
namespace {

Error bad(std::string where, std::string detail) {
  return Error(ErrorCode::kDecode, std::move(where), std::move(detail));
}

std::string finish(json::Writer& w) {
  std::string text = w.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

Result<void> expect_type(const rapidjson::Value& message, const char* type) {
  if (!message.IsObject()) return bad("message", "must be a JSON object");
  auto it = message.FindMember("type");
  if (it == message.MemberEnd() || !it->value.IsString()) {
    return bad("message.type", "missing");
  }
  if (std::string_view(it->value.GetString()) != type) {
    return bad("message.type",
               std::string("expected \"") + type + "\", got \"" + it->value.GetString() + "\"");
  }
  return Ok();
}

Result<uint64_t> get_u64(const rapidjson::Value& obj, const std::string& path, const char* name,
                         uint64_t max) {
  auto it = obj.FindMember(name);
  std::string where = json::field_path(path, name);
  if (it == obj.MemberEnd()) return bad(where, "is required");
  if (!it->value.IsUint64()) return bad(where, "must be an unsigned integer");
  if (it->value.GetUint64() > max) {
    return bad(where, std::to_string(it->value.GetUint64()) + " is above " + std::to_string(max));
  }
  return it->value.GetUint64();
}

Result<double> get_number(const rapidjson::Value& obj, const std::string& path, const char* name) {
  auto it = obj.FindMember(name);
  std::string where = json::field_path(path, name);
  if (it == obj.MemberEnd()) return bad(where, "is required");
  if (!it->value.IsNumber() || !std::isfinite(it->value.GetDouble()) || it->value.GetDouble() < 0) {
    return bad(where, "must be a number of at least 0");
  }
  return it->value.GetDouble();
}

constexpr uint64_t kMax24 = (1u << 24) - 1;

} // namespace

bool is_rdma_mtu(uint64_t mtu) {
  return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

uint32_t agreed_mtu(const RdmaEndpoint& local, const RdmaEndpoint& remote) {
  if (local.mtu != 0 || remote.mtu != 0) {
    // An explicit --mtu is used as asked (check_path_mtu() refuses one a port cannot carry).
    if (local.mtu == 0) return remote.mtu;
    if (remote.mtu == 0) return local.mtu;
    return std::min(local.mtu, remote.mtu);
  }
  return std::min(local.active_mtu, remote.active_mtu);
}

std::string encode_endpoint(const RdmaEndpoint& e) {
  json::Writer w(false);
  w.begin_object();
  w.field("type", kMsgEndpoint);
  w.key("endpoint").begin_object();
  w.key("gid");
  write_gid_choice_json(w, e.gid);
  w.field("lid", e.lid);
  w.field("active_mtu", e.active_mtu);
  w.field("mtu", e.mtu);
  w.field("max_rd_atomic", e.max_rd_atomic);
  w.field("rkey", e.rkey);
  w.field("region_bytes", e.region_bytes);
  w.field("max_inline", e.max_inline);
  w.field("gpu_memory", e.gpu_memory);
  if (e.cm_port != 0) w.field("cm_port", static_cast<unsigned>(e.cm_port));
  w.key("qps").begin_array();
  for (const auto& q : e.qps) {
    w.begin_object();
    w.field("qpn", q.qpn);
    w.field("psn", q.psn);
    w.field("addr", q.addr);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();
  return finish(w);
}

Result<RdmaEndpoint> decode_endpoint(const rapidjson::Value& message, std::size_t expect_qps) {
  FABRIC_TRY(expect_type(message, kMsgEndpoint));
  auto it = message.FindMember("endpoint");
  if (it == message.MemberEnd() || !it->value.IsObject()) {
    return bad("endpoint", "must be an object");
  }
  const rapidjson::Value& e = it->value;
  const std::string path = "endpoint";
  RdmaEndpoint out;
  auto gid = e.FindMember("gid");
  if (gid == e.MemberEnd()) return bad("endpoint.gid", "is required");
  FABRIC_ASSIGN_OR_RETURN(out.gid, parse_gid_choice(gid->value, "endpoint.gid"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t lid, get_u64(e, path, "lid", 0xffff));
  out.lid = static_cast<uint32_t>(lid);
  FABRIC_ASSIGN_OR_RETURN(uint64_t active_mtu, get_u64(e, path, "active_mtu", 4096));
  if (!is_rdma_mtu(active_mtu)) {
    return bad("endpoint.active_mtu", std::to_string(active_mtu) + " is not an RDMA MTU");
  }
  out.active_mtu = static_cast<uint32_t>(active_mtu);
  FABRIC_ASSIGN_OR_RETURN(uint64_t mtu, get_u64(e, path, "mtu", 4096));
  if (mtu != 0 && !is_rdma_mtu(mtu)) {
    return bad("endpoint.mtu", std::to_string(mtu) + " is not an RDMA MTU");
  }
  out.mtu = static_cast<uint32_t>(mtu);
  FABRIC_ASSIGN_OR_RETURN(uint64_t rd, get_u64(e, path, "max_rd_atomic", 255));
  out.max_rd_atomic = static_cast<uint32_t>(rd);
  FABRIC_ASSIGN_OR_RETURN(uint64_t rkey, get_u64(e, path, "rkey", UINT32_MAX));
  out.rkey = static_cast<uint32_t>(rkey);
  FABRIC_ASSIGN_OR_RETURN(out.region_bytes, get_u64(e, path, "region_bytes", UINT64_MAX));
  FABRIC_ASSIGN_OR_RETURN(uint64_t inl, get_u64(e, path, "max_inline", 1u << 20));
  out.max_inline = static_cast<uint32_t>(inl);
  FABRIC_ASSIGN_OR_RETURN(auto gpu, json::get_optional_bool(e, path, "gpu_memory"));
  out.gpu_memory = gpu.value_or(false);
  if (e.HasMember("cm_port")) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t port, get_u64(e, path, "cm_port", 65535));
    out.cm_port = static_cast<uint16_t>(port);
  }
  auto qps = e.FindMember("qps");
  if (qps == e.MemberEnd() || !qps->value.IsArray()) {
    return bad("endpoint.qps", "must be an array");
  }
  if (qps->value.Size() != expect_qps) {
    return bad("endpoint.qps", "has " + std::to_string(qps->value.Size()) +
                                   " queue pairs, the test uses " + std::to_string(expect_qps));
  }
  for (rapidjson::SizeType i = 0; i < qps->value.Size(); ++i) {
    const auto& q = qps->value[i];
    std::string where = "endpoint.qps[" + std::to_string(i) + "]";
    if (!q.IsObject()) return bad(where, "must be an object");
    QpInfo info;
    FABRIC_ASSIGN_OR_RETURN(uint64_t qpn, get_u64(q, where, "qpn", kMax24));
    FABRIC_ASSIGN_OR_RETURN(uint64_t psn, get_u64(q, where, "psn", kMax24));
    FABRIC_ASSIGN_OR_RETURN(info.addr, get_u64(q, where, "addr", UINT64_MAX));
    info.qpn = static_cast<uint32_t>(qpn);
    info.psn = static_cast<uint32_t>(psn);
    out.qps.push_back(info);
  }
  return out;
}

std::string encode_run(const RunRequest& run) {
  json::Writer w(false);
  w.begin_object();
  w.field("type", kMsgRun);
  w.field("size", run.size);
  if (run.duration_s > 0) {
    w.field("duration_s", run.duration_s);
  } else {
    w.field("iters", run.iters);
  }
  w.end_object();
  return finish(w);
}

Result<RunRequest> decode_run(const rapidjson::Value& message) {
  FABRIC_TRY(expect_type(message, kMsgRun));
  RunRequest run;
  FABRIC_ASSIGN_OR_RETURN(run.size, get_u64(message, "", "size", 1ull << 30));
  if (run.size == 0) return bad("size", "must be at least 1");
  if (message.HasMember("duration_s")) {
    FABRIC_ASSIGN_OR_RETURN(run.duration_s, get_number(message, "", "duration_s"));
    if (run.duration_s <= 0 || run.duration_s > 86400) {
      return bad("duration_s", "must be above 0 and at most 86400");
    }
  } else {
    FABRIC_ASSIGN_OR_RETURN(run.iters, get_u64(message, "", "iters", 1000000000));
    if (run.iters == 0) return bad("iters", "must be at least 1");
  }
  return run;
}

std::string encode_done(const SideStats& s) {
  json::Writer w(false);
  w.begin_object();
  w.field("type", kMsgDone);
  w.key("stats").begin_object();
  w.field("messages", s.messages);
  w.field("bytes", s.bytes);
  w.field("seconds", s.seconds);
  w.field("peak_bytes_per_s", s.peak_bytes_per_s);
  w.end_object();
  w.end_object();
  return finish(w);
}

Result<SideStats> decode_done(const rapidjson::Value& message) {
  FABRIC_TRY(expect_type(message, kMsgDone));
  auto it = message.FindMember("stats");
  if (it == message.MemberEnd() || !it->value.IsObject()) return bad("stats", "must be an object");
  SideStats s;
  FABRIC_ASSIGN_OR_RETURN(s.messages, get_u64(it->value, "stats", "messages", UINT64_MAX));
  FABRIC_ASSIGN_OR_RETURN(s.bytes, get_u64(it->value, "stats", "bytes", UINT64_MAX));
  FABRIC_ASSIGN_OR_RETURN(s.seconds, get_number(it->value, "stats", "seconds"));
  FABRIC_ASSIGN_OR_RETURN(s.peak_bytes_per_s, get_number(it->value, "stats", "peak_bytes_per_s"));
  return s;
}

std::string encode_simple(const char* type) {
  return std::string("{\"type\":\"") + type + "\"}";
}

std::string encode_result(const std::string& counters_json) {
  return std::string("{\"type\":\"") + kMsgResult +
         "\",\"counters\":" + (counters_json.empty() ? "{}" : counters_json) + "}";
}

} // namespace fabric::probes
