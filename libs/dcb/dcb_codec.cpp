#include "libs/dcb/dcb_codec.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fabric::pfc::codec {

// The layouts this file relies on (include/uapi/linux/dcbnl.h). A kernel that changed
// them would change its ABI; these catch a wrong header instead.
static_assert(sizeof(ieee_pfc) == 136, "struct ieee_pfc: 4 u8 + u16 delay + 2x8 u64");
static_assert(offsetof(ieee_pfc, requests) == 8, "ieee_pfc.requests is 8-aligned");
static_assert(sizeof(ieee_ets) == 59, "struct ieee_ets: 3 u8 + 7x8 u8");
static_assert(sizeof(dcb_app) == 4, "struct dcb_app: u8 selector, u8 priority, u16 protocol");
static_assert(sizeof(dcbnl_buffer) == 8 + 32 + 4, "struct dcbnl_buffer");
static_assert(sizeof(ieee_maxrate) == 64, "struct ieee_maxrate: 8 u64");
static_assert(IEEE_8021QAZ_MAX_TCS == kTrafficClasses, "traffic class count");

namespace {

template <typename Struct>
Result<Struct> load(const void* data, std::size_t len, const char* attribute) {
  if (len != sizeof(Struct)) {
    return Error(ErrorCode::kDecode, std::string("DCB attribute ") + attribute,
                 "payload is " + std::to_string(len) + " bytes, the kernel struct is " +
                     std::to_string(sizeof(Struct)));
  }
  Struct s;
  std::memcpy(&s, data, sizeof s);
  return s;
}

template <typename T, std::size_t N, typename U>
void copy_array(std::array<T, N>& to, const U (&from)[N]) {
  std::copy(std::begin(from), std::end(from), to.begin());
}
template <typename T, std::size_t N, typename U>
void copy_array(T (&to)[N], const std::array<U, N>& from) {
  std::copy(from.begin(), from.end(), std::begin(to));
}

} // namespace

ieee_pfc to_kernel(const PfcConfig& pfc) {
  ieee_pfc k{};
  k.pfc_cap = pfc.pfc_cap;
  k.pfc_en = pfc.pfc_en;
  k.mbc = pfc.mbc;
  k.delay = pfc.delay;
  copy_array(k.requests, pfc.requests);
  copy_array(k.indications, pfc.indications);
  return k;
}

ieee_ets to_kernel(const EtsConfig& ets) {
  ieee_ets k{};
  k.willing = ets.willing;
  k.ets_cap = ets.ets_cap;
  k.cbs = ets.cbs;
  copy_array(k.tc_tx_bw, ets.tc_tx_bw);
  copy_array(k.tc_rx_bw, ets.tc_rx_bw);
  copy_array(k.tc_tsa, ets.tc_tsa);
  copy_array(k.prio_tc, ets.prio_tc);
  copy_array(k.tc_reco_bw, ets.tc_reco_bw);
  copy_array(k.tc_reco_tsa, ets.tc_reco_tsa);
  copy_array(k.reco_prio_tc, ets.reco_prio_tc);
  return k;
}

dcb_app to_kernel(const AppEntry& app) {
  return dcb_app{app.selector, app.priority, app.protocol};
}

dcbnl_buffer to_kernel(const BufferConfig& buffer) {
  dcbnl_buffer k{};
  copy_array(k.prio2buffer, buffer.prio2buffer);
  copy_array(k.buffer_size, buffer.buffer_size);
  k.total_size = buffer.total_size;
  return k;
}

ieee_maxrate to_kernel(const MaxRate& maxrate) {
  ieee_maxrate k{};
  copy_array(k.tc_maxrate, maxrate.tc_maxrate);
  return k;
}

Result<PfcConfig> decode_pfc(const void* data, std::size_t len, const char* attribute) {
  FABRIC_ASSIGN_OR_RETURN(ieee_pfc k, load<ieee_pfc>(data, len, attribute));
  PfcConfig pfc;
  pfc.pfc_cap = k.pfc_cap;
  pfc.pfc_en = k.pfc_en;
  pfc.mbc = k.mbc;
  pfc.delay = k.delay;
  copy_array(pfc.requests, k.requests);
  copy_array(pfc.indications, k.indications);
  return pfc;
}

Result<EtsConfig> decode_ets(const void* data, std::size_t len, const char* attribute) {
  FABRIC_ASSIGN_OR_RETURN(ieee_ets k, load<ieee_ets>(data, len, attribute));
  EtsConfig ets;
  ets.willing = k.willing;
  ets.ets_cap = k.ets_cap;
  ets.cbs = k.cbs;
  copy_array(ets.tc_tx_bw, k.tc_tx_bw);
  copy_array(ets.tc_rx_bw, k.tc_rx_bw);
  copy_array(ets.tc_tsa, k.tc_tsa);
  copy_array(ets.prio_tc, k.prio_tc);
  copy_array(ets.tc_reco_bw, k.tc_reco_bw);
  copy_array(ets.tc_reco_tsa, k.tc_reco_tsa);
  copy_array(ets.reco_prio_tc, k.reco_prio_tc);
  return ets;
}

Result<AppEntry> decode_app(const void* data, std::size_t len, const char* attribute) {
  FABRIC_ASSIGN_OR_RETURN(dcb_app k, load<dcb_app>(data, len, attribute));
  return AppEntry{k.selector, k.priority, k.protocol};
}

Result<BufferConfig> decode_buffer(const void* data, std::size_t len, const char* attribute) {
  FABRIC_ASSIGN_OR_RETURN(dcbnl_buffer k, load<dcbnl_buffer>(data, len, attribute));
  BufferConfig buffer;
  copy_array(buffer.prio2buffer, k.prio2buffer);
  copy_array(buffer.buffer_size, k.buffer_size);
  buffer.total_size = k.total_size;
  return buffer;
}

Result<MaxRate> decode_maxrate(const void* data, std::size_t len, const char* attribute) {
  FABRIC_ASSIGN_OR_RETURN(ieee_maxrate k, load<ieee_maxrate>(data, len, attribute));
  MaxRate maxrate;
  copy_array(maxrate.tc_maxrate, k.tc_maxrate);
  return maxrate;
}

int errno_from_inband_status(uint8_t status) {
  return status == 0 ? 0 : 256 - status;
}

} // namespace fabric::pfc::codec
