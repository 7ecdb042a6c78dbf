#include "pfc/dcb_report.h"

#include "common/json.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::pfc {
namespace {

void pfc_text(std::string& out, const char* label, const PfcConfig& pfc) {
  out += std::string(label) + " pfc-cap " + std::to_string(pfc.pfc_cap) + " macsec-bypass " +
         (pfc.mbc ? "on" : "off") + " delay " + std::to_string(pfc.delay) + "\n";
  out += "    prio-pfc " + format::prio_bits(pfc.pfc_en) + "\n";
  out += "    requests " + format::indexed(pfc.requests) + "\n";
  out += "    indications " + format::indexed(pfc.indications) + "\n";
}

void ets_text(std::string& out, const char* label, const EtsConfig& ets) {
  out += std::string(label) + " willing " + (ets.willing ? "on" : "off") + " ets-cap " +
         std::to_string(ets.ets_cap) + " cbs " + (ets.cbs ? "on" : "off") + "\n";
  out += "    tc-bw " + format::indexed(ets.tc_tx_bw) + "\n";
  out += "    tc-tsa " + format::tsa_list(ets.tc_tsa) + "\n";
  out += "    prio-tc " + format::indexed(ets.prio_tc) + "\n";
}

void app_text(std::string& out, const char* label, const std::vector<AppEntry>& apps) {
  if (apps.empty()) {
    out += std::string(label) + " (empty)\n";
    return;
  }
  out += label;
  out += "\n";
  for (uint8_t sel : format::selectors_in(apps)) {
    out += "    " + std::string(format::selector_key(sel)) + " " + format::app_entries(apps, sel) +
           "\n";
  }
}

template <typename T, std::size_t N>
void json_array(json::Writer& w, std::string_view key, const std::array<T, N>& values) {
  w.key(key).begin_array();
  for (const auto& v : values)
    w.value(static_cast<uint64_t>(v));
  w.end_array();
}

void pfc_json(json::Writer& w, const PfcConfig& pfc) {
  w.begin_object()
      .field("pfc_cap", unsigned{pfc.pfc_cap})
      .field("macsec_bypass", pfc.mbc != 0)
      .field("delay", unsigned{pfc.delay});
  w.key("prio_pfc").begin_object();
  for (int p = 0; p < kPriorities; ++p)
    w.field(std::to_string(p), (pfc.pfc_en >> p & 1) != 0);
  w.end_object();
  json_array(w, "requests", pfc.requests);
  json_array(w, "indications", pfc.indications);
  w.end_object();
}

void tsa_json(json::Writer& w, std::string_view key, const PerTc<uint8_t>& tsa) {
  w.key(key).begin_array();
  for (uint8_t t : tsa)
    w.value(format::tsa_name(t));
  w.end_array();
}

void ets_json(json::Writer& w, const EtsConfig& ets) {
  w.begin_object()
      .field("willing", ets.willing != 0)
      .field("ets_cap", unsigned{ets.ets_cap})
      .field("cbs", ets.cbs != 0);
  json_array(w, "tc_bw", ets.tc_tx_bw);
  tsa_json(w, "tc_tsa", ets.tc_tsa);
  json_array(w, "prio_tc", ets.prio_tc);
  json_array(w, "reco_tc_bw", ets.tc_reco_bw);
  tsa_json(w, "reco_tc_tsa", ets.tc_reco_tsa);
  json_array(w, "reco_prio_tc", ets.reco_prio_tc);
  w.end_object();
}

void app_json(json::Writer& w, const std::vector<AppEntry>& apps) {
  w.begin_object();
  for (uint8_t sel : format::selectors_in(apps)) {
    w.key(format::selector_key(sel)).begin_array();
    for (const auto& app : apps) {
      if (app.selector != sel) continue;
      w.begin_array().value(unsigned{app.protocol}).value(unsigned{app.priority}).end_array();
    }
    w.end_array();
  }
  w.end_object();
}

template <typename T, typename Fn>
void optional_json(json::Writer& w, std::string_view key, const std::optional<T>& value, Fn fn) {
  w.key(key);
  if (value)
    fn(w, *value);
  else
    w.null();
}

} // namespace

std::string render_state_text(const std::string& dev, const DcbState& state) {
  std::string out =
      dev + ": DCBX " + (state.dcbx ? format::dcbx_mode(*state.dcbx) : "unknown") + "\n";
  if (state.pfc)
    pfc_text(out, "  pfc:", *state.pfc);
  else
    out += "  pfc: not reported by the device\n";
  if (state.ets)
    ets_text(out, "  ets:", *state.ets);
  else
    out += "  ets: not reported by the device\n";
  app_text(out, "  app:", state.apps);
  if (state.buffer) {
    out += "  buffer: total-size " + std::to_string(state.buffer->total_size) + "\n";
    out += "    prio-buffer " + format::indexed(state.buffer->prio2buffer) + "\n";
    out += "    buffer-size " + format::indexed(state.buffer->buffer_size) + "\n";
  }
  if (state.maxrate)
    out += "  maxrate: tc-maxrate " + format::indexed(state.maxrate->tc_maxrate) + "\n";
  if (state.peer_pfc) pfc_text(out, "  peer pfc:", *state.peer_pfc);
  if (state.peer_ets) ets_text(out, "  peer ets:", *state.peer_ets);
  if (!state.peer_apps.empty()) app_text(out, "  peer app:", state.peer_apps);
  return out;
}

std::string render_state_json(const std::string& dev, const DcbState& state, bool pretty) {
  json::Writer w(pretty);
  w.begin_object().field("schema_version", json::kSchemaVersion).field("device", dev);
  w.key("dcbx");
  if (state.dcbx)
    w.value(format::dcbx_mode(*state.dcbx));
  else
    w.null();
  optional_json(w, "pfc", state.pfc, pfc_json);
  optional_json(w, "ets", state.ets, ets_json);
  w.key("app");
  app_json(w, state.apps);
  optional_json(w, "buffer", state.buffer, [](json::Writer& jw, const BufferConfig& b) {
    jw.begin_object();
    json_array(jw, "prio_buffer", b.prio2buffer);
    json_array(jw, "buffer_size", b.buffer_size);
    jw.field("total_size", uint64_t{b.total_size}).end_object();
  });
  optional_json(w, "maxrate", state.maxrate, [](json::Writer& jw, const MaxRate& m) {
    jw.begin_object();
    json_array(jw, "tc_maxrate", m.tc_maxrate);
    jw.end_object();
  });
  w.key("peer").begin_object();
  optional_json(w, "pfc", state.peer_pfc, pfc_json);
  optional_json(w, "ets", state.peer_ets, ets_json);
  w.key("app");
  app_json(w, state.peer_apps);
  w.end_object();
  w.end_object();
  return w.str();
}

std::string render_error_json(const std::string& dev, const Error& error) {
  json::Writer w(true);
  w.begin_object()
      .field("schema_version", json::kSchemaVersion)
      .field("device", dev)
      .field("error", error.message());
  w.key("hint");
  if (error.hint().empty())
    w.null();
  else
    w.value(error.hint());
  w.end_object();
  return w.str();
}

} // namespace fabric::pfc
