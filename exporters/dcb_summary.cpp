#include "exporters/dcb_summary.h"

#include "exporters/stable_hash.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::exporters {

std::string canonical_dcb_text(const pfc::DcbState& s) {
  namespace format = pfc::format;
  std::string out;
  if (s.pfc) {
    out += "pfc cap=" + std::to_string(s.pfc->pfc_cap) + " en=" + format::prio_bits(s.pfc->pfc_en) +
           " mbc=" + std::to_string(s.pfc->mbc) + " delay=" + std::to_string(s.pfc->delay) + "\n";
  } else {
    out += "pfc -\n";
  }
  if (s.ets) {
    const auto& e = *s.ets;
    out += "ets willing=" + std::to_string(e.willing) + " cap=" + std::to_string(e.ets_cap) +
           " cbs=" + std::to_string(e.cbs) + " tc_bw=" + format::indexed(e.tc_tx_bw) +
           " tc_rx_bw=" + format::indexed(e.tc_rx_bw) + " tsa=" + format::tsa_list(e.tc_tsa) +
           " prio_tc=" + format::indexed(e.prio_tc) + " reco_bw=" + format::indexed(e.tc_reco_bw) +
           " reco_tsa=" + format::tsa_list(e.tc_reco_tsa) +
           " reco_prio_tc=" + format::indexed(e.reco_prio_tc) + "\n";
  } else {
    out += "ets -\n";
  }
  for (uint8_t selector : format::selectors_in(s.apps)) {
    out += "app " + std::string(format::selector_key(selector)) + "=" +
           format::app_entries(s.apps, selector) + "\n";
  }
  if (s.buffer) {
    out += "buffer prio_buffer=" + format::indexed(s.buffer->prio2buffer) +
           " size=" + format::indexed(s.buffer->buffer_size) + "\n";
  } else {
    out += "buffer -\n";
  }
  out += s.maxrate ? "maxrate " + format::indexed(s.maxrate->tc_maxrate) + "\n" : "maxrate -\n";
  out += s.dcbx ? "dcbx " + format::dcbx_mode(*s.dcbx) + "\n" : "dcbx -\n";
  return out;
}

std::string dcb_config_hash(const pfc::DcbState& state) {
  return hex_hash(canonical_dcb_text(state));
}

} // namespace fabric::exporters
